// Writes tests/fixtures/gpt2_tokenizer.json: texts and the token ids that the reference GPT-2
// encoder, the npm package gpt-3-encoder (its own index.js / Encoder.js), gives them.
//   node scripts/make_tokenizer_fixtures.js [PACKAGE_DIR] > tests/fixtures/gpt2_tokenizer.json
// PACKAGE_DIR is an unpacked `npm pack gpt-3-encoder@1.1.4` (its package/ folder); without it the
// script runs npm pack itself in a temporary folder. The texts are valid Unicode: the reference works
// on JavaScript strings, so invalid UTF-8 is tested by round trip only (tests/test_tokenizer.cpp).
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const {execSync} = require('child_process');

const VERSION = '1.1.4';
let dir = process.argv[2];
if (!dir) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'gpt2-fixtures-'));
  execSync(`npm pack --silent gpt-3-encoder@${VERSION}`, {cwd: tmp, stdio: ['ignore', 'ignore', 'inherit']});
  execSync(`tar -xzf gpt-3-encoder-${VERSION}.tgz`, {cwd: tmp});
  dir = path.join(tmp, 'package');
}
const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf-8'));
const {encode, decode} = require(path.resolve(dir, 'index.js'));

const texts = [
  '',
  'Hello, world!',
  'The quick brown fox jumps over the lazy dog.',
  'GPT-2 is a large transformer-based language model with 1.5 billion parameters, trained on a dataset of 8 million web pages.',
  "I'm sure it's fine: we've seen they'll say you'd go, they're here and didn't can't won't.",
  "It'S UPPER 'RE 'VE 'LL 'D 'M and 'x 'q ''s '''t ' s '",
  'def f(x):\n    if x > 0:\n        return x * 2\n    return -x\n',
  'int main() {\n\tfor (int i = 0; i < 10; ++i) {\n\t\tprintf("%d\\n", i);\n\t}\n\treturn 0;\n}\n',
  '    leading spaces and trailing spaces    ',
  'a  b   c    d\t\te\n\nf\r\ng \t \n h',
  '\n\n\n\n',
  ' ',
  '   ',
  '\t',
  'line one\nline two\n\n\nline five\n',
  '3.14159 2718 1,000,000 12345678901234567890 0x1F 1e-10 -42 +7',
  '2024-01-01T12:34:56Z 192.168.0.1 $19.99 50% #1 @user',
  'café naïve résumé façade jalapeño Ångström Æsir œuvre straße',
  'Ελληνικά: Καλημέρα κόσμε, ΑΒΓΔ αβγδ',
  'Русский текст: Съешь же ещё этих мягких французских булок, да выпей чаю.',
  '中文：你好，世界！我爱自然语言处理。',
  '日本語のテキスト、カタカナとひらがな。漢字も。',
  '한국어 텍스트입니다.',
  'العربية: مرحبا بالعالم ١٢٣٤٥',
  'עברית: שלום עולם',
  'हिन्दी पाठ: नमस्ते दुनिया',
  'ภาษาไทย สวัสดีชาวโลก',
  'emoji: 😀 😂 🎉 👍 🚀 🐍',
  'ZWJ: 👨‍👩‍👧‍👦 👩‍💻 🏳️‍🌈 👁️‍🗨️',
  'skin tones: 👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🧑🏽‍🚀',
  'flags: 🇺🇸 🇯🇵 🇩🇪 keycaps: 1️⃣ #️⃣',
  'combining: e\u0301 a\u0308 n\u0303 o\u0302\u0323 Z\u0351\u0362\u0348a\u0300\u0301\u0302',
  'digits: ²³ ½ ¾ Ⅻ ⅷ ① ٣ ۴ ५ ๒ 𝟙 𐄇',
  'unicode spaces: a\u00a0b\u2003c\u3000d\u2028e\u2029f\u200bg\ufeffh\u0085i\u180ej\u202fk',
  'math: ∀x ∈ ℝ, ∃y: x² + y² ≤ 1 → ∫₀¹ f(x) dx ≠ ∞',
  'symbols: © ® ™ € £ ¥ § ¶ † ‡ • … ‰ ′ ″ ‹ › « » ¿ ¡',
  'mixed123abc 123abc abc123 a1b2c3 ٣abc',
  'URLs: https://example.com/path?query=1&x=y#frag and mailto:someone@example.org',
  '{"key": "value", "list": [1, 2, 3], "nested": {"a": null}}',
  '["a","b"],["c","d"] ",""," \'," "]," }," ),"  \'\',\'\' "","" .,"" ".,"" ",\'',
  '<|endoftext|>',
  'Hello<|endoftext|>World',
  'aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa',
  '!!!!!!!!!!!!????????........,,,,,,,,;;;;;;::::::------______======',
  'ALL CAPS SENTENCE WITH SOME Mixed Case Words And camelCaseIdentifiers snake_case_names',
  '\u0000\u0001\u0002 control\u0007chars\u001b[0m\u007f',
  'tab\tseparated\tvalues\n1\t2\t3\n',
  '\u00ad soft hyphen and \u00a0 nbsp',
  'Once upon a time, in a land far, far away, there lived a small dragon who loved to read books. ' +
      'Every evening it would curl up by the fire and turn the pages with its tiny claws, ' +
      "dreaming of the worlds it would never see. \"Someday,\" it whispered, \"I'll write my own.\"",
];

// Seeded random texts from a pool that mixes every class the splitter tells apart.
let seed = 12345;
const rand = n => {
  seed = (seed * 1103515245 + 12345) % 2147483648;
  return seed % n;
};
const pool = Array.from(
    'abcxyzABCXYZ0123456789 \t\n\r\'\'\'",.;:!?-_()[]{}<>/\\|@#$%^&*+=~`' +
    'éüßñøΩλЖжאבعب中文字あア한\u0301\u0308²½Ⅻ٣ \u00a0\u3000\u2028\ufeff\u0085\u00ad\u200d😀👍🏽👨‍👩🇺🇸');
const words = ['the', ' the', "'s", "'re", "'ll", 'ing', ' 2024', '...', '","', '],[', '  ', '\n\n', 'über'];
for (let k = 0; k < 200; k++) {
  let s = '';
  const len = rand(40);
  for (let i = 0; i < len; i++) s += rand(4) === 0 ? words[rand(words.length)] : pool[rand(pool.length)];
  texts.push(s);
}

// Long words (over 64 bytes, which the C++ tokenizer merges with its O(n log n) path): runs of one
// class, without the spaces that would split them.
const runs = ['abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZéßñ', '0123456789', ',."\'!?;:()[]{}-_=+*&^%$#@',
              ' \t\n\u3000\u00a0', '😀👍🏽👨‍👩🇺🇸🎉', '中文字漢語日本語あいうアイウ', 'αβγδεЖжзий', '",\'.)]}['];
for (let k = 0; k < 32; k++) {
  const chars = Array.from(runs[k % runs.length]);
  let s = k % 3 === 0 ? ' ' : '';
  const len = 30 + rand(k < 24 ? 200 : 1500);
  for (let i = 0; i < len; i++) s += chars[rand(chars.length)];
  texts.push(s);
}

const cases = texts.map(text => {
  const ids = encode(text);
  if (ids.some(id => typeof id !== 'number')) throw new Error('unknown token for ' + JSON.stringify(text));
  if (decode(ids) !== text) throw new Error('the reference does not round-trip ' + JSON.stringify(text));
  return {text, ids};
});
const out = {
  generator: 'scripts/make_tokenizer_fixtures.js',
  reference: `${pkg.name} ${pkg.version} under node ${process.versions.node} (Unicode ${process.versions.unicode})`,
  cases,
};
// One case per line, so a diff shows which changed.
process.stdout.write('{\n' + ['generator', 'reference'].map(k => `  "${k}": ${JSON.stringify(out[k])},\n`).join('') +
                     '  "cases": [\n' + cases.map(c => '    ' + JSON.stringify(c)).join(',\n') + '\n  ]\n}\n');
