#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The documentation agrees with the parameter registry (common/rw_params.def):
#  - README.md documents every RINGWAY_* variable, every launcher variable
#    (a row "| `MASTER_ADDR` | ...") and every CMake option;
#  - every table row "| `RINGWAY_NAME` | <default> | ... |" of README.md and
#    of each module's README.md states the registry's default: `<default>`
#    exactly as `ringway-netperf --params` prints it; a variable whose
#    default is empty may leave the cell empty or describe it "(in words)";
#  - every "RINGWAY_NAME (default <value> ...)" in include/*.h states it
#    (the first word after "default").
# Usage: check_readme.sh <root> [<tool>]
#   <tool>: a program whose --params prints the registry (ringway-netperf);
#   without one, the registry is read from <root>/common/rw_params.def.
# A mismatch is reported as file:line, the variable, the default stated and
# the registry's.  Exit status 1 on any finding.
set -u
root=${1:-.}
tool=${2:-}
fail=0
complain() {
  echo "$*"
  fail=1
}

# --- the registry: "NAME|default" lines, and the launcher variables -------------
declare -A def=()
launchers=()
if [[ -n $tool ]]; then
  # env -i: every value printed is its default; `""` is an empty one
  if ! table=$(env -i "$tool" --params); then
    echo "check_readme: '$tool --params' failed"
    exit 1
  fi
  while read -r name _value dflt _; do
    [[ $dflt == '""' ]] && dflt=
    def[$name]=$dflt
  done < <(grep -E '^RINGWAY_[A-Z0-9_]+ ' <<<"$table")
  mapfile -t launchers < <(sed -n '/^# launcher variable/,$p' <<<"$table" | grep -v '^#' | awk '{print $1}')
else
  while IFS='|' read -r name dflt; do
    def[RINGWAY_$name]=$dflt
  done < <(grep -oE '^RW_PARAM_[A-Z]+\([a-z_0-9]+, *"[A-Z_0-9]+", *"[^"]*"' "$root/common/rw_params.def" \
           | sed -E 's/.*"([A-Z_0-9]+)", *"([^"]*)"/\1|\2/')
  mapfile -t launchers < <(grep -oE '^RW_PARAM_LAUNCHER\([A-Za-z_0-9]+' "$root/common/rw_params.def" \
                           | sed -E 's/.*\(//')
fi
if [[ ${#def[@]} == 0 ]]; then
  echo "check_readme: no RINGWAY_* variable found in the registry"
  exit 1
fi
cmake_opts=$(grep -oE '^(set|option)\(RINGWAY_[A-Z_]+' "$root/CMakeLists.txt" | sed -E 's/^(set|option)\(//')

# --- README.md documents every variable and option ------------------------------
for name in "${!def[@]}"; do
  grep -q "$name\b" "$root/README.md" || complain "README.md does not document $name"
done
for name in "${launchers[@]}"; do
  grep -qF "| \`$name\` |" "$root/README.md" ||
    complain "README.md has no row \"| \`$name\` | ...\" for the launcher variable $name"
done
for opt in $cmake_opts; do
  grep -q "$opt" "$root/README.md" || complain "README.md does not document the CMake option $opt"
done

# --- defaults in the READMEs' tables --------------------------------------------
check_stated() { # file line name stated
  local file=$1 line=$2 name=$3 stated=$4
  if [[ -z ${def[$name]+set} ]]; then
    grep -qx "$name" <<<"$cmake_opts" ||
      complain "$file:$line: $name: no such variable in the registry"
    return
  fi
  local real=${def[$name]}
  if [[ -z $real ]]; then
    [[ -z $stated || $stated == '""' || $stated == '``' || $stated == \(* ]] ||
      complain "$file:$line: $name: states the default '$stated', the registry's is empty (leave the cell empty or describe it in parentheses)"
  elif [[ $stated != "$real" ]]; then
    complain "$file:$line: $name: states the default '$stated', the registry's is '$real'"
  fi
}
mapfile -t readmes < <(cd "$root" && find . \( -name 'build*' -o -name '.git' \) -prune -o \
                         -name README.md -print | sed 's|^\./||' | sort)
for file in "${readmes[@]}"; do
  while IFS=$'\t' read -r line name stated; do
    [[ $stated =~ ^\`([^\`]*)\`$ ]] && stated=${BASH_REMATCH[1]}
    check_stated "$file" "$line" "$name" "$stated"
  done < <(awk '
    match($0, /^\| *`RINGWAY_[A-Z0-9_]+` *\|[^|]*\|/) {
      n = split(substr($0, RSTART, RLENGTH), cell, "|")
      name = cell[2]; gsub(/[ `]/, "", name)
      val = cell[3]; gsub(/^ +| +$/, "", val)
      print NR "\t" name "\t" val
    }' "$root/$file")
done

# --- "(default <value>)" in the public headers ----------------------------------
for file in "$root"/include/*.h; do
  rel=${file#"$root"/}
  while IFS=$'\t' read -r line name stated; do
    check_stated "$rel" "$line" "$name" "$stated"
  done < <(awk '{
      s = $0
      while (match(s, /RINGWAY_[A-Z0-9_]+ *\(default [^ ,)]*/)) {
        m = substr(s, RSTART, RLENGTH)
        name = m; sub(/ *\(default.*/, "", name)
        val = m; sub(/.*\(default /, "", val)
        print NR "\t" name "\t" val
        s = substr(s, RSTART + RLENGTH)
      }
    }' "$file")
done

[[ $fail == 0 ]] && echo "readme: every variable and option is documented, every stated default is the registry's"
exit $fail
