"""Writes tests/fixtures/spm_tokenizer.json: a small SentencePiece BPE model (trained here on a
generated corpus, with byte fallback, as LLaMA's tokenizer is) as the arrays a GGUF file would hold
(tokens, scores, token types), and the ids SentencePiece itself gives a varied set of texts.

    /usr/bin/python3 scripts/make_spm_fixtures.py > tests/fixtures/spm_tokenizer.json

Needs Debian's python3-sentencepiece (`make fixtures` installs it). The training options are LLaMA's
where they matter for encoding: identity normalization (no NFKC), no collapsing of spaces, a "▁" in
front of the text, byte fallback, digits split.
"""
import io
import json
import random
import sys

import sentencepiece as spm

# ---- a generated corpus: seeded sentences of English words with a little accented Latin, Greek,
# Cyrillic and CJK, so that those characters are in the vocabulary and emoji are not ----
WORDS = ("the of and to in is was that for it with as on be at by this had not are but from or have an "
         "they which one you were her all she there would their we him been has when who will more no if "
         "out so said what up its about into than them can only other new some could time these two may "
         "then do first any my now such like our over man me even most made after also did many before "
         "must through back years where much your way well down should because each just those people how "
         "too little state good very make world still own see men work long get here between both life "
         "being under never day same another know while last might us great old year off come since "
         "against go came right used take three tokenizer merge byte piece model llama").split()
EXTRA = ("café naïve résumé façade jalapeño straße Ångström über déjà vu "
         "καλημέρα κόσμε αβγ привет мир текст 你好 世界 中文 日本語 テキスト").split()
PUNCT = [".", ",", "!", "?", ";", ":", "'s", "-", "(", ")", "\"", "123", "2024", "3.14"]

rng = random.Random(1234)


def sentence():
    n = rng.randint(4, 16)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.08:
            out.append(rng.choice(EXTRA))
        elif r < 0.16:
            out.append(rng.choice(PUNCT))
        else:
            w = rng.choice(WORDS)
            out.append(w.capitalize() if rng.random() < 0.1 else w)
    return " ".join(out)


corpus = [sentence() for _ in range(3000)]

model = io.BytesIO()
spm.SentencePieceTrainer.train(
    sentence_iterator=iter(corpus), model_writer=model, model_type="bpe", vocab_size=700,
    byte_fallback=True, normalization_rule_name="identity", remove_extra_whitespaces=False,
    add_dummy_prefix=True, split_digits=True, allow_whitespace_only_pieces=True,
    character_coverage=1.0, minloglevel=2)
sp = spm.SentencePieceProcessor(model_proto=model.getvalue())

# GGUF's tokenizer.ggml.token_type: 1 normal, 2 unknown, 3 control, 4 user-defined, 5 unused, 6 byte.
def token_type(i):
    if sp.is_unknown(i):
        return 2
    if sp.is_control(i):
        return 3
    if sp.is_byte(i):
        return 6
    if sp.is_unused(i):
        return 5
    return 1


TEXTS = [
    "", "Hello world", "the model of the world", "The quick brown fox jumps over the lazy dog.",
    " leading space", "trailing space ", "  two leading", "   three  inner   spaces   ", " ", "  ", "\t",
    "a\tb", "line one\nline two\n\n\nline five\n", "\n", "\r\n", "tabs\tand\nnewlines\r\nmixed",
    "café naïve résumé façade jalapeño straße Ångström", "über déjà vu", "Ελληνικά: καλημέρα κόσμε",
    "привет мир, текст", "你好，世界！中文 日本語のテキスト", "한국어 텍스트", "emoji: 😀 😂 🎉 👍",
    "ZWJ: 👨‍👩‍👧‍👦 👩‍💻 🏳️‍🌈", "skin tones: 👍🏻 👍🏿", "flags: 🇺🇸 🇯🇵",
    "combining: e\u0301 a\u0308 n\u0303", "digits 0123456789 3.14159 2024-01-01", "x² ½ ① ٣",
    "symbols: © ® ™ € £ ¥ § ¶ † • …", "unicode spaces: a\u00a0b\u2003c\u3000d", "\u200b\ufeff",
    "math: ∀x ∈ ℝ, ∃y: x² + y² ≤ 1", "<s> </s> <unk> <0x41>", "tokenizer merge byte piece model llama",
    "ALL CAPS WORDS AND MixedCase", "I'm sure it's fine: we've seen they'll say", "a" * 100,
    "the" * 40, "!!!???...,,,;;;", "{\"key\": [1, 2, 3]}", "https://example.com/path?query=1&x=y#frag",
]
pool = list("abcdefghijklmnopqrstuvwxyzABCXYZ0123456789 \t\n.,!?'\"-()éüßñαβжд你好世界😀👍🏽\u200d\u00a0")
for _ in range(150):
    TEXTS.append("".join(rng.choice(pool) if rng.random() < 0.7 else rng.choice(WORDS + EXTRA)
                         for _ in range(rng.randint(1, 30))))

cases = []
for text in TEXTS:
    ids = sp.encode(text)
    decoded = sp.decode(ids)
    if decoded != text:
        sys.exit("SentencePiece does not round-trip %r: %r" % (text, decoded))
    cases.append({"text": text, "ids": ids})

out = {
    "generator": "scripts/make_spm_fixtures.py",
    "reference": "sentencepiece %s (model_type=bpe, vocab_size=700, byte_fallback)" % spm.__version__,
    "bos": sp.bos_id(), "eos": sp.eos_id(), "unk": sp.unk_id(),
    "tokens": [sp.id_to_piece(i) for i in range(sp.get_piece_size())],
    "scores": [sp.get_score(i) for i in range(sp.get_piece_size())],
    "token_types": [token_type(i) for i in range(sp.get_piece_size())],
}
# One case per line, so a diff shows which changed.
lines = ['  %s: %s,' % (json.dumps(k), json.dumps(v, ensure_ascii=False)) for k, v in out.items()]
sys.stdout.write("{\n" + "\n".join(lines) + '\n  "cases": [\n' +
                 ",\n".join("    " + json.dumps(c, ensure_ascii=False) for c in cases) + "\n  ]\n}\n")
