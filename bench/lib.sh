# SPDX-License-Identifier: Apache-2.0
# Sourced by the benchmarks under bench/.

# bench_update_docs DOC NAME SECTION: replace what lies between the lines
# "<!-- bench/NAME: begin (generated, do not edit) -->" and "<!-- bench/NAME: end -->" of the
# Markdown file DOC with the file SECTION. Returns 1 with a line on stderr, DOC untouched,
# when DOC or either marker line is missing.
bench_update_docs() {
	local doc=$1 name=$2 section=$3
	local begin="<!-- bench/$name: begin (generated, do not edit) -->"
	local end="<!-- bench/$name: end -->"

	if [[ ! -f $doc ]]; then
		echo "bench/$name: $doc does not exist" >&2
		return 1
	fi
	if ! grep -qxF "$begin" "$doc" || ! grep -qxF "$end" "$doc"; then
		echo "bench/$name: $doc lacks the marker lines '$begin' and '$end'" >&2
		return 1
	fi
	awk -v begin="$begin" -v end="$end" -v file="$section" '
		$0 == begin { print; while ((getline line < file) > 0) print line; skip = 1; next }
		$0 == end { skip = 0 }
		!skip { print }' "$doc" >"$doc.tmp" && mv "$doc.tmp" "$doc"
}

# bench_cgroup2: print the cgroup v2 mount (/sys/fs/cgroup, or /sys/fs/cgroup/unified on a
# hybrid host); nothing, and status 1, when there is none
bench_cgroup2() {
	local d
	for d in /sys/fs/cgroup /sys/fs/cgroup/unified; do
		if [[ $(stat -f -c %T "$d" 2>/dev/null) == cgroup2fs ]]; then
			echo "$d"
			return 0
		fi
	done
	return 1
}
