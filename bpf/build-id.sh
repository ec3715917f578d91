#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bpf/meson.build: the header naming this build of the programs (bpf/node.c pins the node's
# set under it): the first 16 hex digits of the MD5 of the BPF objects the skeletons embed.
set -eu
sum=$(cat "$@" | md5sum | cut -c1-16)
printf '#define PROBE_BUILD_ID "%s"\n' "$sum"
