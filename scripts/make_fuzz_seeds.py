"""Writes seed inputs for the libFuzzer targets that need a valid input too large to be found by
chance (tests/fuzz/README.md):

    /usr/bin/python3 scripts/make_fuzz_seeds.py OUT_DIR

OUT_DIR/gpt2_tokenizer/minimal: the input of fuzz_gpt2_tokenizer, an encoder.json with GPT-2's 256
byte tokens (bytes_to_unicode, as in OpenAI's encoder.py), a few merged tokens and <|endoftext|>,
then a 0 byte, then a vocab.bpe with those merges. (fuzz_gguf needs no seed of its own: the GGUF
fixtures in tests/fixtures/gguf seed it.)
"""

import json
import os
import sys


def bytes_to_unicode():
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1)) + list(range(ord("\xae"), ord("\xff") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return {b: chr(c) for b, c in zip(bs, cs)}


def main():
    out = os.path.join(sys.argv[1] if len(sys.argv) > 1 else ".", "gpt2_tokenizer")
    os.makedirs(out, exist_ok=True)
    tokens = [bytes_to_unicode()[b] for b in range(256)]
    merges = [("H", "e"), ("l", "l"), ("He", "ll"), ("\u0120", "w"), ("o", "r"), ("\u0120w", "or")]
    tokens += [a + b for a, b in merges] + ["<|endoftext|>"]
    encoder = json.dumps({t: i for i, t in enumerate(tokens)}, ensure_ascii=False).encode("utf-8")
    vocab = ("#version: 0.2\n" + "".join(f"{a} {b}\n" for a, b in merges)).encode("utf-8")
    with open(os.path.join(out, "minimal"), "wb") as f:
        f.write(encoder + b"\0" + vocab)


if __name__ == "__main__":
    main()
