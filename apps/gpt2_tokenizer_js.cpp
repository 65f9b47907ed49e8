// tokenizer.js of the GPT-2 page (export_pages.h): GPT-2's byte-level BPE as OpenAI's encoder and
// lazygrad's GPT2Tokenizer (src/text/) compute it, from the folder's vocab.json and merges.txt.
#include "export_pages.h"

namespace lazygrad::cli {

const char* gpt2_tokenizer_js() {
  return R"JS(// GPT-2's byte-level BPE tokenizer (written by lazygrad export --webgpu, docs/webgpu.md).
// Text is split into words by GPT-2's pattern, each word's UTF-8 bytes are spelled with one
// character per byte (bytesToUnicode), and the word is merged pair by pair, the lowest-ranked pair
// of merges.txt first, into tokens of vocab.json.

const PATTERN = /'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+/gu;

// Byte -> the character that spells it: printable Latin-1 bytes as themselves, the others as
// U+0100 and up, in order.
function bytesToUnicode() {
  const printable = (b) => (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
  const out = [];
  let next = 256;
  for (let b = 0; b < 256; b++) out.push(String.fromCodePoint(printable(b) ? b : next++));
  return out;
}

export class GPT2Tokenizer {
  // vocab: token -> id (vocab.json); merges: merges.txt's text ("#version" line, then "a b" per line).
  constructor(vocab, merges) {
    this.encoder = new Map(Object.entries(vocab));
    this.decoder = [];
    for (const [token, id] of this.encoder) this.decoder[id] = token;
    this.ranks = new Map();
    for (const line of merges.split("\n")) {
      if (!line || line.startsWith("#version")) continue;
      this.ranks.set(line.replace(/\r$/, ""), this.ranks.size);
    }
    this.byteChar = bytesToUnicode();
    this.charByte = new Map(this.byteChar.map((c, b) => [c, b]));
    this.cache = new Map();
    this.utf8 = new TextEncoder();
  }

  static async load(base) {
    const get = async (name) => {
      const r = await fetch(new URL(name, base));
      if (!r.ok) throw new Error(`cannot fetch ${name}: HTTP ${r.status}`);
      return r;
    };
    return new GPT2Tokenizer(await (await get("vocab.json")).json(), await (await get("merges.txt")).text());
  }

  // One word (its bytes spelled as characters) as tokens.
  bpe(word) {
    const cached = this.cache.get(word);
    if (cached) return cached;
    let parts = [...word];
    while (parts.length > 1) {
      let best = -1, bestRank = Infinity;
      for (let i = 0; i + 1 < parts.length; i++) {
        const rank = this.ranks.get(parts[i] + " " + parts[i + 1]);
        if (rank !== undefined && rank < bestRank) [best, bestRank] = [i, rank];
      }
      if (best < 0) break;
      const a = parts[best], b = parts[best + 1], merged = [];
      for (let i = 0; i < parts.length; i++) {
        if (i + 1 < parts.length && parts[i] === a && parts[i + 1] === b) {
          merged.push(a + b);
          i++;
        } else {
          merged.push(parts[i]);
        }
      }
      parts = merged;
    }
    this.cache.set(word, parts);
    return parts;
  }

  encode(text) {
    const ids = [];
    for (const [word] of text.matchAll(PATTERN)) {
      const spelled = Array.from(this.utf8.encode(word), (b) => this.byteChar[b]).join("");
      for (const token of this.bpe(spelled)) {
        const id = this.encoder.get(token);
        if (id === undefined) throw new Error(`the vocabulary has no token ${JSON.stringify(token)}`);
        ids.push(id);
      }
    }
    return ids;
  }

  // The bytes one token stands for (a character may be split across tokens: decode a stream of
  // them with TextDecoder's {stream: true}).
  tokenBytes(id) {
    const token = this.decoder[id];
    if (token === undefined) throw new Error(`token ${id} is outside the vocabulary`);
    return Uint8Array.from([...token], (c) => this.charByte.get(c));
  }

  tokenId(token) {
    const id = this.encoder.get(token);
    return id === undefined ? -1 : id;
  }
}
)JS";
}

}  // namespace lazygrad::cli
