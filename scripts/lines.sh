#!/usr/bin/env bash
# Non-blank lines of code per folder (`make lines`). The core is the library: include/ + src/.
set -euo pipefail
cd "$(dirname "$0")/.."

# Non-blank lines in the source files under the given paths (fixtures and data are not counted).
count() {
  find "$@" -type f \( -name '*.h' -o -name '*.hpp' -o -name '*.cpp' -o -name '*.c' -o -name '*.py' \
    -o -name '*.sh' -o -name 'CMakeLists.txt' -o -name '*.cmake' \) -print0 2>/dev/null |
    xargs -0 -r cat | grep -cv '^[[:space:]]*$' || true
}

core_dirs=(include/lazygrad src/ir src/shape src/tensor src/engine src/codegen src/renderer src/runtime src/nn src/data src/text)
other_dirs=(python apps models tests bench examples scripts)
for d in "${core_dirs[@]}" "${other_dirs[@]}"; do
  printf '%-18s %6d\n' "$d" "$(count "$d")"
done
# Files directly in src/ or in folders not listed above, so the core total adds up.
rest=$(count src)
for d in "${core_dirs[@]:1}"; do rest=$((rest - $(count "$d"))); done
[[ $rest -ne 0 ]] && printf '%-18s %6d\n' "src (other)" "$rest"
printf '%-18s %6d\n' "core (include+src)" $(( $(count include/lazygrad) + $(count src) ))
