# Turn TAP files into one record per line, tab-separated, for the judges
# (qemu/judge-expected.sh, scripts/compare-tiers.sh):
#   case  PROGRAM  pass|fail|skip  DESCRIPTION  REASON  NUMBER
#   plan  PROGRAM  N               [SKIP REASON of a "1..0 # SKIP" plan]
# PROGRAM is the TAP file's name without .tap. DESCRIPTION is what follows
# "ok N [-]" up to a SKIP/TODO directive; cases are matched by it, so a
# repeated description gets " [2]", " [3]" ... and an empty one "#N".
# A program that skipped as a whole ("1..0 # SKIP why") yields one skip case
# named "(whole program)". Only top-level lines count: kselftest subtests
# are indented or start with "#".
#   awk -f tap-cases.awk FILE.tap...
BEGIN { OFS = "\t" }

FNR == 1 {
	prog = FILENAME
	sub(/^.*\//, "", prog)
	sub(/\.tap$/, "", prog)
	delete seen
}

/^1\.\.[0-9]+/ {
	n = $0
	sub(/^1\.\./, "", n)
	sub(/[^0-9].*$/, "", n)
	reason = ""
	if (n == 0 && match(tolower($0), /#[ \t]*skip/)) {
		reason = substr($0, RSTART + RLENGTH)
		gsub(/^[ \t:-]+|[ \t]+$/, "", reason)
		print "case", prog, "skip", "(whole program)", reason, 0
	}
	print "plan", prog, n, reason
	next
}

/^(not )?ok([ \t]|$)/ {
	line = $0
	status = "pass"
	if (line ~ /^not ok/) {
		status = "fail"
		sub(/^not ok/, "", line)
	} else {
		sub(/^ok/, "", line)
	}
	num = ""
	if (match(line, /^[ \t]+[0-9]+/)) {
		num = substr(line, RSTART, RLENGTH)
		gsub(/[ \t]/, "", num)
		line = substr(line, RSTART + RLENGTH)
	}
	sub(/^[ \t]*(-[ \t]*)?/, "", line)
	reason = ""
	# The directive is the last "# SKIP" / "# TODO" on the line.
	if (match(line, /#[ \t]*([Ss][Kk][Ii][Pp]|[Tt][Oo][Dd][Oo])/)) {
		directive = tolower(substr(line, RSTART, RLENGTH))
		reason = substr(line, RSTART + RLENGTH)
		line = substr(line, 1, RSTART - 1)
		gsub(/^[ \t:-]+|[ \t]+$/, "", reason)
		if (directive ~ /skip/ && status == "pass")
			status = "skip"
	}
	gsub(/^[ \t]+|[ \t]+$/, "", line)
	gsub(/\t/, " ", line)
	gsub(/\t/, " ", reason)
	if (line == "")
		line = "#" num
	if (++seen[line] > 1)
		line = line " [" seen[line] "]"
	print "case", prog, status, line, reason, num
}
