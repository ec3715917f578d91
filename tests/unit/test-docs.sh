#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# test-docs.sh SPARKSHIM SRC_DIR: every long flag of `sparkshim --help` is documented in the
# man page source and in its committed roff; every SPARKSHIM_* variable the shim and the
# policy library read is documented; the roff is not older than its Markdown source.
set -eu
shim=$1
src=$2
status=0

"$shim" --help >help.txt
flags=$(sed -n 's/^  *\(-[a-z], \)*\(--[a-z][a-z-]*\).*/\2/p' help.txt | sort -u)
[ -n "$flags" ] || { echo "no flags found in sparkshim --help"; exit 1; }
for f in $flags; do
	# Markdown writes **\-\-grace**, pandoc's roff \f[B]--grace
	grep -qF -- "\\-\\-${f#--}" "$src/docs/sparkshim.1.md" ||
		{ echo "docs/sparkshim.1.md does not document $f"; status=1; }
	grep -qF -- "[B]$f" "$src/docs/man/sparkshim.1" ||
		{ echo "docs/man/sparkshim.1 does not document $f (run scripts/man)"; status=1; }
done
for v in $(grep -ho '"SPARKSHIM_[A-Z_]*"' "$src"/shim/*.c "$src"/measure/*.c "$src"/policy/*.c | tr -d '"' | sort -u); do
	grep -q "$v" "$src/docs/sparkshim.1.md" || { echo "sparkshim.1.md does not document $v"; status=1; }
done
for md in "$src"/docs/*.[1-9].md; do
	page=$src/docs/man/$(basename "$md" .md)
	[ -f "$page" ] || { echo "$page is missing (run scripts/man)"; status=1; continue; }
	[ "$(sed -n 's/^footer: //p' "$md")" = "sparkshim $("$shim" --version | cut -d' ' -f2)" ] ||
		{ echo "$md: footer does not name this version"; status=1; }
done
[ $status = 0 ] && echo "docs: $(echo "$flags" | wc -l) flags documented"
exit $status
