#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# check_spdx.sh <source dir>
#
# Every source file of the project (C, C++, headers, shell, Python, CMake, linker version
# scripts) names its licence in an SPDX line near its top; LICENSE holds the BSD-2-Clause text.
# Fails listing the files that do not.
set -uo pipefail
root=${1:?usage: check_spdx.sh <source dir>}
[[ -f $root/LICENSE ]] && grep -q "BSD 2-Clause License" "$root/LICENSE" || { echo "no BSD-2-Clause LICENSE in $root"; exit 1; }
missing=()
checked=0
while IFS= read -r -d '' f; do
    checked=$((checked + 1))
    head -n 5 "$f" | grep -q "SPDX-License-Identifier: BSD-2-Clause" || missing+=("${f#"$root"/}")
done < <(find "$root" \( -path "$root/build*" -o -path "$root/.git" \) -prune -o -type f \
    \( -name '*.c' -o -name '*.cpp' -o -name '*.h' -o -name '*.sh' -o -name '*.py' \
       -o -name '*.map' -o -name '*.def' -o -name CMakeLists.txt -o -path "$root/.ci/run" \) -print0)
if ((${#missing[@]})); then
    echo "files without an SPDX BSD-2-Clause line in their first 5 lines:"
    printf '  %s\n' "${missing[@]}"
    exit 1
fi
echo "SPDX: $checked files, every one BSD-2-Clause"
