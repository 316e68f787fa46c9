# Turn TAP files into one record per line, tab-separated, for the judges
# (qemu/judge-expected.sh, scripts/compare-tiers.sh):
#   case  PROGRAM  pass|fail|skip|bad  DESCRIPTION  REASON  NUMBER
#   plan  PROGRAM  N               [SKIP REASON of a "1..0 # SKIP" plan]
# PROGRAM is the TAP file's name without .tap. DESCRIPTION is what follows
# "ok N [-]" up to the first " #"; cases are matched by it, so a repeated
# description gets " [2]", " [3]" ... and an empty one "#N".
# REASON: a skip's reason; for a failure, the text after its " #" or else
# the last diagnostic lines ("# ...") printed since the previous result,
# without the kselftest harness's own RUN/FAIL lines.
# "bad": a result our programs must never report, whatever its ok/not ok:
# a TODO, XFAIL or XPASS directive (REASON says which). A case that is
# expected to fail is written as an expectation, not as a directive.
# A program that skipped as a whole ("1..0 # SKIP why") yields one skip case
# named "(whole program)". Only top-level lines count: kselftest subtests
# are indented.
#   awk -f tap-cases.awk FILE.tap...
BEGIN { OFS = "\t" }

function trim(s) {
	gsub(/^[ \t:-]+|[ \t]+$/, "", s)
	gsub(/\t/, " ", s)
	return s
}

FNR == 1 {
	prog = FILENAME
	sub(/^.*\//, "", prog)
	sub(/\.tap$/, "", prog)
	delete seen
	diag = ""
}

/^1\.\.[0-9]+/ {
	n = $0
	sub(/^1\.\./, "", n)
	sub(/[^0-9].*$/, "", n)
	reason = ""
	if (n == 0 && match(tolower($0), /#[ \t]*skip/)) {
		reason = trim(substr($0, RSTART + RLENGTH))
		print "case", prog, "skip", "(whole program)", reason, 0
	}
	print "plan", prog, n, reason
	next
}

# A bail-out explains the failure run.sh records for the program's exit.
/^Bail out!/ {
	d = $0
	sub(/^Bail out![ \t]*/, "", d)
	diag = "Bail out! " trim(d)
	next
}

# Diagnostics of the case that follows, minus the harness's bookkeeping.
/^#/ {
	d = $0
	sub(/^#[ \t]*/, "", d)
	if (d != "" && d !~ /^(RUN|OK|FAIL|SKIP|PASSED|FAILED|Totals)([ \t:]|$)/ &&
	    d !~ /^Starting [0-9]+ tests? from/ &&
	    d !~ /: Test (failed|terminated)/)
		diag = (length(diag) > 300 ? "" : diag (diag == "" ? "" : " | ")) trim(d)
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
	# The description ends at the first " #" (or a "#" that starts it).
	comment = ""
	if (match(line, /(^|[ \t])#/)) {
		comment = substr(line, RSTART + RLENGTH)
		line = substr(line, 1, RSTART - 1)
	}
	reason = trim(comment)
	if (match(tolower(comment), /^[ \t]*(skip|todo|xfail|xpass)/)) {
		directive = toupper(trim(substr(comment, RSTART, RLENGTH)))
		reason = trim(substr(comment, RSTART + RLENGTH))
		if (directive == "SKIP") {
			if (status == "pass")
				status = "skip"
		} else {
			status = "bad"
			reason = directive ": " reason
		}
	}
	if (status == "fail" && reason == "")
		reason = diag
	diag = ""
	gsub(/^[ \t]+|[ \t]+$/, "", line)
	gsub(/\t/, " ", line)
	if (line == "")
		line = "#" num
	if (++seen[line] > 1)
		line = line " [" seen[line] "]"
	print "case", prog, status, line, reason, num
}
