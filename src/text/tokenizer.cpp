// Tokenizer (include/lazygrad/tokenizer.h): the handle, and GPT-2's tokenizer behind it.
#include "lazygrad/error.h"
#include "text/tokenizer_impl.h"

namespace lazygrad {
namespace {

class Gpt2Impl final : public Tokenizer::Impl {
 public:
  explicit Gpt2Impl(GPT2Tokenizer tok) : tok_(std::move(tok)) {}
  std::vector<int32_t> encode(std::string_view text, EncodeOptions) const override {
    return tok_.encode(text);
  }
  std::string decode(std::span<const int32_t> ids, bool skip_special) const override {
    if (!skip_special) return tok_.decode(ids);
    std::string out;
    for (size_t i = 0; i < ids.size(); ++i) {
      if (ids[i] == tok_.eos_token_id()) continue;
      out += tok_.decode(ids.subspan(i, 1));
    }
    return out;
  }
  std::string token_bytes(int32_t id) const override { return tok_.decode(std::span<const int32_t>(&id, 1)); }
  size_t vocab_size() const override { return tok_.vocab_size(); }
  int32_t bos_token_id() const override { return -1; }
  int32_t eos_token_id() const override { return tok_.eos_token_id(); }
  std::string id_to_token(int32_t id) const override { return tok_.id_to_token(id); }
  int32_t token_to_id(std::string_view token) const override { return tok_.token_to_id(token); }

 private:
  GPT2Tokenizer tok_;
};

}  // namespace

Tokenizer::Tokenizer(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
Tokenizer::Tokenizer(GPT2Tokenizer gpt2) : impl_(std::make_shared<Gpt2Impl>(std::move(gpt2))) {}

std::vector<int32_t> Tokenizer::encode(std::string_view text, EncodeOptions options) const {
  return impl_->encode(text, options);
}
std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  return impl_->decode(ids, skip_special);
}
std::string Tokenizer::token_bytes(int32_t id) const { return impl_->token_bytes(id); }
size_t Tokenizer::vocab_size() const { return impl_->vocab_size(); }
int32_t Tokenizer::bos_token_id() const { return impl_->bos_token_id(); }
int32_t Tokenizer::eos_token_id() const { return impl_->eos_token_id(); }
std::string Tokenizer::id_to_token(int32_t id) const { return impl_->id_to_token(id); }
int32_t Tokenizer::token_to_id(std::string_view token) const { return impl_->token_to_id(token); }

}  // namespace lazygrad
