#!/usr/bin/env bash
# The repository speaks of the project only: no notes on how it was developed (work-log
# numbering, the machines and tools it was developed with and their limits) and no paths of one
# machine (absolute home, work or virtual-environment directories). Scans the tracked text
# files of the git repository at DIR (default: this repository) and prints every offending
# `file:line: text`; exits 1 if there is any, 0 with a one-line summary otherwise.
#
#   bash scripts/hygiene.sh [DIR]
#
# Accepted exceptions, if ever needed: lines `path:regex` in scripts/hygiene-allow.txt (of the
# repository checked); a match on a line of `path` that also matches `regex` is not reported.
set -euo pipefail
dir=${1:-"$(dirname "$0")/.."}
cd "$dir"
git rev-parse --git-dir > /dev/null 2>&1 || { echo "hygiene: $dir is not a git repository" >&2; exit 2; }

# Extended regular expressions, matched case-insensitively.
patterns=(
  '\bsessions?\b'                                  # work-log numbering
  '\bissues? #?[0-9]+'                             # numbered work items
  '\blent\b'                                       # borrowed development machines
  '\b(the|H[0-9]{3}|GPU) box\b'                    # a development machine by nickname
  '\bdevice (tool|call|run)s?\b'                   # the tool that ran commands on a GPU machine
  "\\bcall'?s limit\\b"
  '\bhanded back\b'
  '\bworking tree (that )?travels\b'               # what that tool copied, and its limits
  '\b64 MiB\b'
  '(^|[^A-Za-z0-9_.~-])/(work|root|home|Users)/[A-Za-z]'   # absolute paths of one machine
  '/tmp/[A-Za-z0-9_.-]*env\b'                      # a virtual environment under /tmp
)
# This check (it spells the patterns out) and the allowlist.
excluded=(scripts/hygiene.sh scripts/hygiene-allow.txt)
# Not text, or compressed.
binary=(xz gz tgz npz npy zst zip png jpg jpeg gif webp ico pdf)

args=()
for p in "${patterns[@]}"; do args+=(-e "$p"); done
pathspecs=(.)
for f in "${excluded[@]}"; do pathspecs+=(":(exclude)$f"); done
for e in "${binary[@]}"; do pathspecs+=(":(exclude,glob)**/*.$e"); done

allow=()
if [ -f scripts/hygiene-allow.txt ]; then
  while IFS= read -r line; do
    [[ -z "$line" || "$line" == \#* ]] || allow+=("$line")
  done < scripts/hygiene-allow.txt
fi

# -I: binary files are skipped; -z: file names and lines split safely whatever they hold.
hits=0
files=()
while IFS= read -r -d '' file && IFS= read -r -d '' line && IFS= read -r -d $'\n' text; do
  for a in "${allow[@]+"${allow[@]}"}"; do
    if [[ "$file" == "${a%%:*}" ]] && grep -q -i -E -e "${a#*:}" <<< "$text"; then continue 2; fi
  done
  [ "${#text}" -le 160 ] || text="${text:0:157}..."
  printf '%s:%s: %s\n' "$file" "$line" "$text"
  hits=$((hits + 1))
  files+=("$file")
done < <(git grep -z -I -n -i -E "${args[@]}" -- "${pathspecs[@]}" || true)

tracked=$(git ls-files | wc -l)
if [ "$hits" -gt 0 ]; then
  n=$(printf '%s\n' "${files[@]}" | sort -u | wc -l)
  echo "hygiene: $hits line(s) in $n file(s) name how the project was developed or a machine's paths" >&2
  exit 1
fi
echo "hygiene: $tracked tracked files, none names how the project was developed or a machine's paths"
