#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# Tests tests/check_readme.sh itself: it passes a consistent tree and fails,
# naming file:line, the variable, the stated and the real default, on each
# wrong default planted in a copy.
# Usage: check_readme_test.sh <root> [<tool>]   (<tool>: ringway-netperf)
set -u
root=$(cd "${1:-.}" && pwd)
tool=${2:-}
check="$root/tests/check_readme.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failures=0
bad() {
  echo "FAIL: $*"
  failures=$((failures + 1))
}

# expect_fail <dir> <text> [<tool>]: the check fails and prints <text>
expect_fail() {
  local out
  if out=$(bash "$check" "$1" ${3:+"$3"} 2>&1); then
    bad "$1: the check passed, expected a failure with: $2"
  elif ! grep -qF -- "$2" <<<"$out"; then
    bad "$1: no '$2' in:"$'\n'"$out"
  fi
}

# --- a small consistent tree (the registry read from its rw_params.def) ---------
mini=$tmp/mini
mkdir -p "$mini/common" "$mini/coll" "$mini/include"
cat >"$mini/common/rw_params.def" <<'EOF'
RW_PARAM_INT(nchannels, "NCHANNELS", "4", 1, 32, "rings")
RW_PARAM_SIZE(chunk_bytes, "CHUNK_BYTES", "4M", 4096, 268435456, "chunk")
RW_PARAM_STR(root, "ROOT", "", "rendezvous")
RW_PARAM_ENUM(algo, "ALGO", "ring", "ring|ps", "algorithm")
RW_PARAM_LAUNCHER(MASTER_ADDR, "torchrun's rank 0 host")
EOF
cat >"$mini/CMakeLists.txt" <<'EOF'
option(RINGWAY_WERROR "Warnings are errors" OFF)
EOF
cat >"$mini/README.md" <<'EOF'
# mini

| Variable | Default | Meaning |
|---|---|---|
| `RINGWAY_NCHANNELS` | `4` | rings |
| `RINGWAY_CHUNK_BYTES` | `4M` | chunk |
| `RINGWAY_ROOT` | (empty) | rendezvous |
| `RINGWAY_ALGO` | `ring` | algorithm |

| Variable | Set by | Meaning |
|---|---|---|
| `MASTER_ADDR` | torchrun | rank 0's host |

| Option | Default | Meaning |
|---|---|---|
| `RINGWAY_WERROR` | `OFF` | warnings are errors |
EOF
cat >"$mini/coll/README.md" <<'EOF'
| variable | default | |
|---|---|---|
| `RINGWAY_ALGO` | `ring` | ring or ps |
| `RINGWAY_ROOT` | | rendezvous |
EOF
cat >"$mini/include/ringway.h" <<'EOF'
/* Tuning: RINGWAY_NCHANNELS (default 4), RINGWAY_CHUNK_BYTES (default 4M bytes). */
EOF
if ! out=$(bash "$check" "$mini" 2>&1); then
  bad "the consistent tree fails:"$'\n'"$out"
fi

# each planted mistake, on a fresh copy
plant() { # name sed-expression file
  rm -rf "$tmp/$1"
  cp -r "$mini" "$tmp/$1"
  sed -i -e "$2" "$tmp/$1/$3"
  echo "$tmp/$1"
}
expect_fail "$(plant readme 's/| `4` | rings/| `8` | rings/' README.md)" \
  "README.md:5: RINGWAY_NCHANNELS: states the default '8', the registry's is '4'"
expect_fail "$(plant module 's/| `ring` | ring or ps/| `ps` | ring or ps/' coll/README.md)" \
  "coll/README.md:3: RINGWAY_ALGO: states the default 'ps', the registry's is 'ring'"
expect_fail "$(plant empty 's/| `RINGWAY_ROOT` | |/| `RINGWAY_ROOT` | `host:1` |/' coll/README.md)" \
  "coll/README.md:4: RINGWAY_ROOT: states the default 'host:1', the registry's is empty"
expect_fail "$(plant header 's/(default 4M bytes)/(default 2M bytes)/' include/ringway.h)" \
  "include/ringway.h:1: RINGWAY_CHUNK_BYTES: states the default '2M', the registry's is '4M'"
expect_fail "$(plant unknown 's/RINGWAY_ALGO` | `ring` | ring or ps/RINGWAY_ALGORITHM` | `ring` | x/' coll/README.md)" \
  "coll/README.md:3: RINGWAY_ALGORITHM: no such variable in the registry"
expect_fail "$(plant launcher '/MASTER_ADDR/d' README.md)" \
  "README.md has no row \"| \`MASTER_ADDR\` | ...\" for the launcher variable MASTER_ADDR"
expect_fail "$(plant undocumented '/RINGWAY_CHUNK_BYTES/d' README.md)" \
  "README.md does not document RINGWAY_CHUNK_BYTES"

# --- the real tree, the registry from the tool: a wrong default in each file ----
if [[ -n $tool ]]; then
  real=$tmp/real
  mkdir -p "$real"
  while IFS= read -r f; do
    mkdir -p "$real/$(dirname "$f")"
    cp "$root/$f" "$real/$f"
  done < <(cd "$root" && find . \( -name 'build*' -o -name '.git' \) -prune -o \
             \( -name README.md -o -path ./include/ringway.h -o -path ./common/rw_params.def \
                -o -path ./CMakeLists.txt \) -print)
  declare -A regdef=()
  while read -r name _ dflt _; do
    regdef[$name]=$dflt
  done < <(env -i "$tool" --params | grep -E '^RINGWAY_')
  planted=0
  while IFS= read -r file; do
    # the first row with a default in backticks
    hit=$(grep -nE '^\| *`RINGWAY_[A-Z0-9_]+` *\| *`[^`]+` *\|' "$real/$file" | head -1)
    [[ -z $hit ]] && continue
    line=${hit%%:*}
    name=$(sed -E 's/^[^`]*`(RINGWAY_[A-Z0-9_]+)`.*/\1/' <<<"${hit#*:}")
    [[ -z ${regdef[$name]+set} ]] && continue # a CMake option
    cp "$real/$file" "$tmp/saved"
    sed -i -E "${line}s/^(\| *\`RINGWAY_[A-Z0-9_]+\` *\| *)\`[^\`]+\`/\1\`WRONG\`/" "$real/$file"
    expect_fail "$real" "$file:$line: $name: states the default 'WRONG', the registry's is '${regdef[$name]}'" "$tool"
    cp "$tmp/saved" "$real/$file"
    planted=$((planted + 1))
  done < <(cd "$real" && find . -name README.md | sed 's|^\./||' | sort)
  [[ $planted -ge 4 ]] || bad "only $planted README(s) with a default to plant a mistake in"
  hline=$(grep -n 'RINGWAY_TIMEOUT_MS (default ' "$real/include/ringway.h" | head -1 | cut -d: -f1)
  if [[ -z $hline ]]; then
    bad "include/ringway.h states no default of RINGWAY_TIMEOUT_MS"
  else
    sed -i "${hline}s/RINGWAY_TIMEOUT_MS (default [0-9]*/RINGWAY_TIMEOUT_MS (default 17/" \
      "$real/include/ringway.h"
    expect_fail "$real" "include/ringway.h:$hline: RINGWAY_TIMEOUT_MS: states the default '17', the registry's is '${regdef[RINGWAY_TIMEOUT_MS]}'" "$tool"
  fi
fi

if [[ $failures == 0 ]]; then
  echo "check_readme_test: every planted mistake was found"
  exit 0
fi
exit 1
