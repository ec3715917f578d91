#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The agent's class-file edits (jvmagent/classfile.c) in a real JVM: the four kinds of edit
# applied to tests/agent/fixtures/Sample.class, the result loaded through the JVM's verifier
# with a Java stand-in for the hook class, and what each edit does checked by calling it.
# Usage: classfile.sh AGENT JDK_HOME SOURCE_DIR CLASSFILE_EDIT
. "$(dirname "$0")/common.sh"
SRC=$3
EDIT=$4

mkdir -p "$WORK/edited" "$WORK/check"
if ! "$EDIT" "$SRC/fixtures/Sample.class" "$WORK/edited/Sample.class"; then
  fail "classfile-edit did not make all four edits"
  finish
fi
"$JAVAC" -d "$WORK/check" $(find "$SRC/classfile" -name '*.java')
if "$JAVA" -Xlog:verification=info:file="$WORK/verify.log" -cp "$WORK/check" ClassfileCheck \
  "$WORK/edited"; then
  pass "the edited class ran and did what each edit says"
else
  fail "the edited class: see above"
fi
# the class went through the verifier (app classes are verified by default; say so)
if grep -q "Verifying class Sample with new format" "$WORK/verify.log"; then
  pass "the JVM verified the edited class (StackMapTable frames of the new methods)"
else
  fail "no verification of Sample logged: $(head -c 400 "$WORK/verify.log")"
fi
finish
