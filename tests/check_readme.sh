#!/usr/bin/env bash
# SPDX-License-Identifier: Apache-2.0
# The README documents every RINGWAY_* variable of the parameter registry
# (common/rw_params.def) and every CMake option.  Usage: check_readme.sh <root>
set -u
root=${1:-.}
fail=0
for name in $(grep -oE '^RW_PARAM_[A-Z]+\([a-z_0-9]+, *"[A-Z_0-9]+"' "$root/common/rw_params.def" \
              | sed -E 's/.*"([A-Z_0-9]+)"/\1/'); do
  if ! grep -q "RINGWAY_$name\b" "$root/README.md"; then
    echo "README.md does not document RINGWAY_$name"
    fail=1
  fi
done
for opt in $(grep -oE '^set\((RINGWAY_[A-Z_]+)|^option\((RINGWAY_[A-Z_]+)' "$root/CMakeLists.txt" \
             | sed -E 's/^(set|option)\(//'); do
  if ! grep -q "$opt" "$root/README.md"; then
    echo "README.md does not document the CMake option $opt"
    fail=1
  fi
done
# ... with the registry's default in its row (variables whose default is empty
# describe it in words instead)
while IFS='|' read -r name def; do
  [[ -z $def ]] && continue
  if ! grep -qF "| \`RINGWAY_$name\` | \`$def\` |" "$root/README.md"; then
    echo "README.md: the row of RINGWAY_$name does not show the default \`$def\`"
    fail=1
  fi
done < <(grep -oE '^RW_PARAM_[A-Z]+\([a-z_0-9]+, *"[A-Z_0-9]+", *"[^"]*"' "$root/common/rw_params.def" \
         | sed -E 's/.*"([A-Z_0-9]+)", *"([^"]*)"/\1|\2/')

[[ $fail == 0 ]] && echo "readme: every variable and option is documented"
exit $fail
