# case_key(DESCRIPTION): a case's name for the tier's case list
# (tests/expect/TIER.cases): counts, sizes and ids in a description vary
# from run to run, so a run of 16 or more hex digits (an id) reads "H" and
# any other number "N". Plain POSIX awk (mawk has no {16,}).
function case_key(d,   out) {
	out = ""
	while (match(d, /[0-9A-F][0-9A-F]*/)) {
		out = out substr(d, 1, RSTART - 1) (RLENGTH >= 16 ? "H" : substr(d, RSTART, RLENGTH))
		d = substr(d, RSTART + RLENGTH)
	}
	d = out d
	gsub(/[0-9]+/, "N", d)
	return d
}
