// nn modules: state dicts (PyTorch's keys and order, round trips, load errors), PyTorch's forward
// values and gradients for a small conv net with given weights (tests/fixtures/nn.txt, written by
// scripts/fixtures_nn.py), initialization by its moments, train/eval switching, registration.
//
//   LAZYGRAD_TEST_FIXTURES=$PWD/tests/fixtures ./build/test_nn
//
// The models are few and small and share shapes, so the suite compiles few kernels.
#include <gtest/gtest.h>
#include <lazygrad/lazygrad.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

using namespace lazygrad;

namespace {

// ------------------------------------------------------------------ the fixture file

// A tensor as the fixture writes it: dtype name, shape, row-major values.
struct FixtureTensor {
  std::string dtype;
  Shape shape;
  std::vector<double> values;
  Tensor tensor() const {
    if (dtype == "int64") {
      std::vector<int64_t> v(values.begin(), values.end());
      return Tensor::from_vector(v, shape);
    }
    std::vector<float> v(values.begin(), values.end());
    return Tensor::from_vector(v, shape);
  }
};

struct FixtureModel {
  std::string repr;
  std::vector<std::pair<std::string, FixtureTensor>> state;  // in PyTorch's state_dict order
  std::map<std::string, FixtureTensor> tensors;
  StateDict state_dict() const {
    StateDict out;
    for (const auto& [key, t] : state) out.emplace(key, t.tensor());
    return out;
  }
  const FixtureTensor& at(const std::string& name) const {
    auto it = tensors.find(name);
    if (it == tensors.end()) throw std::runtime_error("nn.txt: no tensor " + name);
    return it->second;
  }
};

FixtureTensor parse_tensor(std::istringstream& in) {
  FixtureTensor t;
  std::string shape;
  in >> t.dtype >> shape;
  std::string dims = shape.substr(1, shape.size() - 2);
  std::istringstream ds(dims);
  for (std::string d; std::getline(ds, d, ',');) t.shape.push_back(std::stoll(d));
  for (std::string v; in >> v;) t.values.push_back(std::stod(v));
  return t;
}

std::string unescape(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); i++) {
    if (s[i] == '\\' && i + 1 < s.size()) {
      out += s[i + 1] == 'n' ? '\n' : s[i + 1];
      i++;
    } else {
      out += s[i];
    }
  }
  return out;
}

const std::map<std::string, FixtureModel>& fixture_models() {
  static const std::map<std::string, FixtureModel> models = [] {
    const char* dir = std::getenv("LAZYGRAD_TEST_FIXTURES");
    std::string path = std::string(dir && *dir ? dir : LAZYGRAD_FIXTURE_DIR) + "/nn.txt";
    std::ifstream file(path);
    if (!file) throw std::runtime_error("cannot open " + path);
    std::map<std::string, FixtureModel> out;
    FixtureModel* model = nullptr;
    for (std::string line; std::getline(file, line);) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream in(line);
      std::string tag, name;
      in >> tag;
      if (tag == "model") {
        in >> name;
        model = &out[name];
      } else if (tag == "repr") {
        model->repr = unescape(line.substr(5));
      } else if (tag == "state") {
        in >> name;
        model->state.emplace_back(name, parse_tensor(in));
      } else if (tag == "tensor") {
        in >> name;
        model->tensors[name] = parse_tensor(in);
      }
    }
    return out;
  }();
  return models;
}

const FixtureModel& fixture(const std::string& name) { return fixture_models().at(name); }

void expect_close(const Tensor& got, const FixtureTensor& want, const std::string& what, double rtol = 1e-4,
                  double atol = 1e-5) {
  ASSERT_TRUE(got.defined()) << what;
  ASSERT_EQ(got.shape(), want.shape) << what;
  ASSERT_EQ(std::string(dtype_name(got.dtype())), want.dtype) << what;
  std::vector<double> v = got.to_vector<double>();
  for (size_t i = 0; i < v.size(); i++) {
    // The file's decimal is the shortest that reads back as PyTorch's float32.
    double w = want.dtype == "float32" ? static_cast<float>(want.values[i]) : want.values[i];
    ASSERT_NEAR(v[i], w, atol + rtol * std::abs(w)) << what << " at " << i;
  }
}

// ------------------------------------------------------------------ the models (as in
// scripts/fixtures_nn.py)

std::shared_ptr<nn::Sequential> make_convnet() {
  return std::make_shared<nn::Sequential>(std::make_shared<nn::Conv2d>(1, 3, 3, 1, 1),
                                          std::make_shared<nn::BatchNorm2d>(3), std::make_shared<nn::ReLU>(),
                                          std::make_shared<nn::MaxPool2d>(2), std::make_shared<nn::Flatten>(),
                                          std::make_shared<nn::Linear>(27, 4));
}

// A user-defined module: its own parameter and buffers (one not persistent) before its children.
class Block : public nn::Module {
 public:
  // Tensor::ones and zeros would do; host data compiles no fill kernel.
  explicit Block(int64_t dim) {
    scale = register_parameter("scale", Tensor::from_vector(std::vector<float>(dim, 1.0f), {dim}));
    offset = register_buffer("offset", Tensor::from_vector(std::vector<float>(dim, 0.0f), {dim}));
    cache = register_buffer("cache", Tensor::from_vector(std::vector<float>(dim, 0.0f), {dim}),
                            /*persistent=*/false);
    norm = register_module("norm", std::make_shared<nn::LayerNorm>(dim));
    proj = register_module("proj", std::make_shared<nn::Linear>(dim, dim));
  }
  Tensor forward(const Tensor& x) override { return (*proj)((*norm)(x)*scale + offset); }

  Tensor scale, offset, cache;
  std::shared_ptr<nn::LayerNorm> norm;
  std::shared_ptr<nn::Linear> proj;
};

class Nested : public nn::Module {
 public:
  Nested() {
    features = register_module("features", make_convnet());
    blocks = register_module("blocks", std::make_shared<nn::ModuleList>());
    blocks->append(std::make_shared<Block>(4)).append(std::make_shared<Block>(4));
    embed = register_module("embed", std::make_shared<nn::Embedding>(10, 4, 0));
    gn = register_module("gn", std::make_shared<nn::GroupNorm>(2, 4));
    up = register_module("up", std::make_shared<nn::ConvTranspose2d>(4, 2, 3, 2, 1, 1, 1, false));
    conv1 = register_module("conv1", std::make_shared<nn::Conv1d>(2, 4, 3, 1, "same", 2, 2));
    bn1 = register_module("bn1", std::make_shared<nn::BatchNorm1d>(4, 1e-5, 0.1, false));
    head = register_module("head", std::make_shared<nn::Linear>(4, 2, false));
    drop = register_module("drop", std::make_shared<nn::Dropout>(0.25));
  }
  std::shared_ptr<nn::Sequential> features;
  std::shared_ptr<nn::ModuleList> blocks;
  std::shared_ptr<nn::Embedding> embed;
  std::shared_ptr<nn::GroupNorm> gn;
  std::shared_ptr<nn::ConvTranspose2d> up;
  std::shared_ptr<nn::Conv1d> conv1;
  std::shared_ptr<nn::BatchNorm1d> bn1;
  std::shared_ptr<nn::Linear> head;
  std::shared_ptr<nn::Dropout> drop;
};

std::vector<std::string> keys_of(const nn::NamedTensors& named) {
  std::vector<std::string> keys;
  for (const auto& [k, t] : named) keys.push_back(k);
  return keys;
}

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no lazygrad::Error)";
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The moments of a tensor's values.
struct Moments {
  double mean, var, min, max;
};
Moments moments_of(const Tensor& t) {
  std::vector<double> v = t.to_vector<double>();
  double sum = 0, sq = 0;
  for (double x : v) sum += x;
  double mean = sum / static_cast<double>(v.size());
  for (double x : v) sq += (x - mean) * (x - mean);
  return {mean, sq / static_cast<double>(v.size()), *std::min_element(v.begin(), v.end()),
          *std::max_element(v.begin(), v.end())};
}

}  // namespace

// ------------------------------------------------------------------ parity with PyTorch

TEST(NnParity, ConvNetForwardAndGradientsEqualPyTorch) {
  const FixtureModel& f = fixture("convnet");
  auto model = make_convnet();
  model->load_state_dict(f.state_dict());
  Tensor x = f.at("x").tensor(), y = f.at("y").tensor();

  // Training mode: batch statistics; the running ones and the batch count are updated.
  Tensor out = (*model)(x);
  Tensor loss = nn::CrossEntropyLoss()(out, y);
  loss.backward();
  std::vector<Tensor> pending = {out, loss};
  for (const Tensor& b : model->buffers()) pending.push_back(b);
  realize(pending);
  expect_close(out, f.at("out_train"), "out_train");
  expect_close(loss, f.at("loss"), "loss");
  for (const auto& [name, p] : model->named_parameters()) {
    // Every parameter gets a gradient, PyTorch's (the conv bias's is ~1e-8: BatchNorm cancels it).
    ASSERT_TRUE(p.grad().defined()) << name << " got no gradient";
    expect_close(p.grad(), f.at("grad." + name), "grad of " + name);
  }
  for (const auto& [name, b] : model->named_buffers())
    expect_close(b, f.at("after." + name), name + " after a step");

  // Evaluation mode: the running statistics normalize, and nothing is updated.
  model->eval();
  Tensor out_eval = (*model)(x);
  expect_close(out_eval, f.at("out_eval"), "out_eval");
  EXPECT_EQ((*model)[1]->named_buffers()[2].second.item<int64_t>(), 1);

  model->zero_grad();
  for (const Tensor& p : model->parameters()) EXPECT_FALSE(p.grad().defined());
}

TEST(NnParity, StateDictKeysOrderShapesAndReprEqualPyTorch) {
  const FixtureModel& f = fixture("nested");
  Nested model;
  nn::NamedTensors state = model.ordered_state_dict();
  ASSERT_EQ(state.size(), f.state.size());
  for (size_t i = 0; i < state.size(); i++) {
    EXPECT_EQ(state[i].first, f.state[i].first) << "entry " << i;
    EXPECT_EQ(state[i].second.shape(), f.state[i].second.shape) << state[i].first;
    EXPECT_EQ(std::string(dtype_name(state[i].second.dtype())), f.state[i].second.dtype) << state[i].first;
  }
  StateDict sorted = model.state_dict();
  std::set<std::string> want;
  for (const auto& [k, t] : f.state) want.insert(k);
  std::set<std::string> got;
  for (const auto& [k, t] : sorted) got.insert(k);
  EXPECT_EQ(got, want);
  EXPECT_EQ(model.to_string(), f.repr);
  EXPECT_EQ(make_convnet()->to_string(), fixture("convnet").repr);
}

TEST(NnParity, LoadsAPyTorchStateDictAndComputesLikeIt) {
  const FixtureModel& f = fixture("nested");
  Nested model;
  model.load_state_dict(f.state_dict());
  nn::NamedTensors state = model.ordered_state_dict();
  ASSERT_EQ(state.size(), f.state.size());
  for (size_t i = 0; i < state.size(); i++) {
    ASSERT_EQ(state[i].first, f.state[i].first);
    expect_close(state[i].second, f.state[i].second, state[i].first, 0, 0);  // copied exactly
  }
  expect_close(model.up->forward(f.at("up_in").tensor()), f.at("up_out"), "ConvTranspose2d");
  expect_close(model.conv1->forward(f.at("conv1_in").tensor()), f.at("conv1_out"),
               "Conv1d same, dilated, grouped");
}

// ------------------------------------------------------------------ state dicts

TEST(NnStateDict, RoundTripGivesIdenticalOutputs) {
  Tensor x = fixture("convnet").at("x").tensor();
  Tensor::manual_seed(1);
  auto a = make_convnet();
  Tensor::manual_seed(2);
  auto b = make_convnet();
  a->eval();
  b->eval();
  std::vector<float> out_a = (*a)(x).to_vector<float>();
  EXPECT_NE((*b)(x).to_vector<float>(), out_a) << "two seeds gave the same model";

  b->load_state_dict(a->state_dict());
  EXPECT_EQ((*b)(x).to_vector<float>(), out_a);

  // A training step moves a's running statistics; they travel too.
  a->train();
  (*a)(x);
  nn::IncompatibleKeys none = b->load_state_dict(a->state_dict());
  EXPECT_TRUE(none.missing_keys.empty() && none.unexpected_keys.empty());
  for (size_t i = 0; i < 3; i++)
    EXPECT_EQ(b->buffers()[i].to_vector<double>(), a->buffers()[i].to_vector<double>()) << i;
  EXPECT_EQ(b->buffers()[2].item<int64_t>(), 1);

  // The copies are b's own: a later change to a is not seen by b, and b's parameters are still
  // leaves that collect gradients.
  Tensor b_bias = b->named_parameters()[1].second;
  std::vector<float> before = b_bias.to_vector<float>();
  {
    NoGrad no_grad;
    Tensor a_bias = a->parameters()[1];
    a_bias.assign(Tensor::from_vector<float>({0, 0, 0}, {3}));
    a_bias.realize();
  }
  EXPECT_EQ(b_bias.to_vector<float>(), before);
  EXPECT_TRUE(b_bias.requires_grad() && b_bias.is_leaf());
}

TEST(NnStateDict, LoadErrorsListMissingUnexpectedAndMismatchedKeys) {
  auto model = make_convnet();
  StateDict good = model->state_dict();
  std::vector<float> weight_before = model->parameters()[0].to_vector<float>();

  StateDict bad = good;
  bad.erase("0.bias");
  bad.erase("1.running_var");
  bad.emplace("extra.weight", Tensor::zeros({2}));
  bad["5.weight"] = Tensor::zeros({4, 26});
  bad["0.weight"] = good.at("0.weight") * 0;  // would change the weight, were anything loaded
  std::string msg = error_of([&] { model->load_state_dict(bad); });
  EXPECT_TRUE(contains(msg, "load_state_dict: Error(s) in loading state_dict for Sequential:")) << msg;
  EXPECT_TRUE(contains(msg, "Missing key(s) in state_dict: \"0.bias\", \"1.running_var\".")) << msg;
  EXPECT_TRUE(contains(msg, "Unexpected key(s) in state_dict: \"extra.weight\".")) << msg;
  EXPECT_TRUE(contains(msg,
                       "size mismatch for 5.weight: copying a param with shape {4, 26} from checkpoint, the "
                       "shape in current model is {4, 27}."))
      << msg;
  EXPECT_EQ(model->parameters()[0].to_vector<float>(), weight_before) << "a failed load changed the model";

  // Not strict: missing and unexpected keys are returned and the rest is loaded; a shape mismatch
  // still throws.
  std::string mismatch = error_of([&] { model->load_state_dict(bad, false); });
  EXPECT_TRUE(contains(mismatch, "size mismatch for 5.weight")) << mismatch;
  EXPECT_FALSE(contains(mismatch, "Missing")) << mismatch;
  bad["5.weight"] = good.at("5.weight");
  nn::IncompatibleKeys keys = model->load_state_dict(bad, false);
  EXPECT_EQ(keys.missing_keys, (std::vector<std::string>{"0.bias", "1.running_var"}));
  EXPECT_EQ(keys.unexpected_keys, (std::vector<std::string>{"extra.weight"}));
  for (float w : model->parameters()[0].to_vector<float>()) EXPECT_EQ(w, 0.0f);

  // BatchNorm's num_batches_tracked may be absent (old checkpoints), as in PyTorch.
  StateDict old = good;
  old.erase("1.num_batches_tracked");
  EXPECT_TRUE(model->load_state_dict(old).missing_keys.empty());

  StateDict undefined = good;
  undefined["0.bias"] = Tensor();
  EXPECT_TRUE(
      contains(error_of([&] { model->load_state_dict(undefined); }), "\"0.bias\" is an undefined tensor"));
}

TEST(NnStateDict, DtypesThatDoNotConvertAreRefused) {
  // An integer tensor in a float checkpoint is not a weight: it is refused by name, with both dtypes,
  // and nothing is loaded (PyTorch's copy_ would convert it). Float dtypes convert, as in PyTorch.
  for (bool assign : {false, true}) {
    auto model = make_convnet();
    const StateDict good = model->state_dict();
    const std::vector<float> weight_before = good.at("0.weight").to_vector<float>();
    StateDict bad = good;
    bad["0.weight"] = Tensor::ones(good.at("0.weight").shape(), kInt32);
    bad["1.num_batches_tracked"] = Tensor::full({}, 3.0, kFloat32);  // a float for an int64 counter
    const std::string msg = error_of([&] { model->load_state_dict(bad, true, assign); });
    EXPECT_TRUE(contains(msg,
                         "dtype mismatch for 0.weight: copying a param of dtype int32 from checkpoint, the "
                         "dtype in current model is float32"))
        << msg;
    EXPECT_TRUE(contains(msg, "dtype mismatch for 1.num_batches_tracked: copying a param of dtype float32"))
        << msg;
    EXPECT_EQ(model->state_dict().at("0.weight").to_vector<float>(), weight_before) << "a failed load wrote";

    // float16, bfloat16 and float64 into float32 are rounded in; int32 into int64 widens.
    StateDict converted = good;
    converted["0.weight"] = good.at("0.weight").to(kFloat16);
    converted["0.bias"] = good.at("0.bias").to(kBFloat16);
    converted["5.weight"] = good.at("5.weight").to(kFloat64);
    converted["1.num_batches_tracked"] = Tensor::full({}, 7.0, kInt32);
    ASSERT_NO_THROW(model->load_state_dict(converted, true, assign));
    const StateDict now = model->state_dict();
    EXPECT_EQ(now.at("0.weight").to_vector<float>(),
              good.at("0.weight").to(kFloat16).to(kFloat32).to_vector<float>());
    EXPECT_EQ(now.at("0.bias").to_vector<float>(),
              good.at("0.bias").to(kBFloat16).to(kFloat32).to_vector<float>());
    EXPECT_EQ(now.at("5.weight").to_vector<float>(), good.at("5.weight").to_vector<float>());
    EXPECT_EQ(now.at("1.num_batches_tracked").dtype(), kInt64);
    EXPECT_EQ(now.at("1.num_batches_tracked").item<int64_t>(), 7);
  }
  EXPECT_TRUE(nn::loads_into(kBFloat16, kFloat32) && nn::loads_into(kFloat32, kFloat16));
  EXPECT_TRUE(nn::loads_into(kUInt8, kInt16) && nn::loads_into(kInt8, kInt64) &&
              nn::loads_into(kUInt32, kUInt64));
  EXPECT_FALSE(nn::loads_into(kInt32, kFloat32) || nn::loads_into(kBool, kFloat32) ||
               nn::loads_into(kUInt8, kFloat64));
  EXPECT_FALSE(nn::loads_into(kInt64, kInt32) || nn::loads_into(kUInt8, kInt8) ||
               nn::loads_into(kInt8, kUInt64));
  EXPECT_FALSE(nn::loads_into(kFloat32, kInt64) || nn::loads_into(kBool, kInt32) ||
               nn::loads_into(kInt32, kBool));
}

// ------------------------------------------------------------------ registration and walks

TEST(NnModule, NamesOrderSharingAndHandles) {
  auto model = make_convnet();
  EXPECT_EQ(keys_of(model->named_parameters()),
            (std::vector<std::string>{"0.weight", "0.bias", "1.weight", "1.bias", "5.weight", "5.bias"}));
  EXPECT_EQ(keys_of(model->named_buffers()),
            (std::vector<std::string>{"1.running_mean", "1.running_var", "1.num_batches_tracked"}));
  EXPECT_EQ(keys_of(model->named_parameters("net")).front(), "net.0.weight");
  EXPECT_EQ(model->children().size(), 6u);
  EXPECT_TRUE((*model)[0]->parameters(false).size() == 2 && model->parameters(false).empty());
  for (const Tensor& p : model->parameters()) EXPECT_TRUE(p.requires_grad() && p.is_leaf());
  for (const Tensor& b : model->buffers()) EXPECT_FALSE(b.requires_grad());

  // parameters() hands out the module's own tensors: an assign through one is the module's.
  auto bn = std::dynamic_pointer_cast<nn::BatchNorm2d>((*model)[1]);
  ASSERT_NE(bn, nullptr);
  {
    NoGrad no_grad;
    Tensor bias = model->parameters()[3];
    bias.assign(Tensor::from_vector<float>({1, 1, 1}, {3}));
    bias.realize();
  }
  EXPECT_EQ(bn->bias.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn->bias.impl(), model->parameters()[3].impl());

  // A module reachable twice: its parameters are listed once, its state under both names.
  auto block = std::make_shared<Block>(4);
  nn::Sequential twice(block, block);
  EXPECT_EQ(twice.parameters().size(), 5u);
  EXPECT_EQ(
      keys_of(twice.named_parameters()),
      (std::vector<std::string>{"0.scale", "0.norm.weight", "0.norm.bias", "0.proj.weight", "0.proj.bias"}));
  EXPECT_EQ(keys_of(twice.ordered_state_dict()).size(), 12u);
  // Non-persistent buffers are buffers, but not state.
  EXPECT_EQ(block->buffers().size(), 2u);
  EXPECT_EQ(
      keys_of(block->ordered_state_dict()),
      (std::vector<std::string>{"scale", "offset", "norm.weight", "norm.bias", "proj.weight", "proj.bias"}));

  // Registering a name again replaces the entry in its place.
  Tensor old_scale = block->scale;
  block->scale = block->register_parameter("scale", Tensor::from_vector<float>({0, 0, 0, 0}, {4}));
  EXPECT_EQ(keys_of(block->named_parameters()).front(), "scale");
  EXPECT_NE(block->parameters()[0].impl(), old_scale.impl());

  nn::Sequential empty;
  Tensor x = Tensor::ones({2});
  EXPECT_EQ(empty(x).impl(), x.impl());  // an empty Sequential returns its input
  int visited = 0;
  model->apply([&](nn::Module&) { visited++; });
  EXPECT_EQ(visited, 7);
  EXPECT_EQ((*model)[-1]->type_name(), "Linear");
}

// PyTorch's Sequential runs its _modules: one added by name runs in its place in the order, one
// registered again under a used name replaces the old one where it was, and one held twice runs
// twice.
TEST(NnModule, SequentialRunsEveryRegisteredModuleInOrder) {
  nn::Sequential seq(std::make_shared<nn::Identity>());
  seq.register_module("double", std::make_shared<nn::Linear>(1, 1, false));
  NoGrad no_grad;
  dynamic_cast<nn::Linear&>(*seq[1]).weight.assign(Tensor::full({1, 1}, 2.0f));
  seq.append(std::make_shared<nn::ReLU>());
  EXPECT_EQ(seq.size(), 3u);
  std::vector<std::string> names;
  for (const auto& [name, m] : seq.named_children()) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0", "double", "2"}));
  EXPECT_EQ(seq(Tensor::from_vector<float>({-1, 3}, {2, 1})).to_vector<float>(), (std::vector<float>{0, 6}));
  seq.register_module("2", std::make_shared<nn::Tanh>());  // replaces the ReLU in its place
  EXPECT_EQ(seq[-1]->type_name(), "Tanh");
  EXPECT_FLOAT_EQ(seq(Tensor::from_vector<float>({-1}, {1, 1})).item<float>(), std::tanh(-2.0f));
  auto twice = std::make_shared<nn::Linear>(1, 1, false);
  twice->weight.assign(Tensor::full({1, 1}, 3.0f));
  nn::Sequential repeated(twice, twice);
  EXPECT_FLOAT_EQ(repeated(Tensor::ones({1, 1})).item<float>(), 9.0f);
}

TEST(NnModule, BadRegistrationAndIndexingThrow) {
  Block block(4);
  EXPECT_TRUE(contains(error_of([&] { block.register_parameter("a.b", Tensor::ones({4})); }),
                       "register_parameter: parameter name can't contain \".\""));
  EXPECT_TRUE(contains(error_of([&] { block.register_buffer("", Tensor::ones({4})); }),
                       "buffer name can't be empty"));
  EXPECT_TRUE(contains(error_of([&] { block.register_buffer("scale", Tensor::ones({4})); }),
                       "attribute \"scale\" already exists as a parameter of Block"));
  EXPECT_TRUE(contains(error_of([&] { block.register_parameter("norm", Tensor::ones({4})); }),
                       "already exists as a module"));
  EXPECT_TRUE(contains(error_of([&] { block.register_parameter("steps", Tensor::zeros({4}, kInt64)); }),
                       "must be floating point to require grad, got int64"));
  EXPECT_TRUE(
      contains(error_of([&] { block.register_module("m", std::shared_ptr<nn::Linear>()); }), "is null"));
  block.register_parameter("steps_i", Tensor::from_vector<int64_t>({0, 0}, {2}), false);  // fine without grad

  nn::ModuleList list({std::make_shared<nn::ReLU>()});
  EXPECT_TRUE(contains(error_of([&] { list[1]; }), "ModuleList: index 1 is out of range for 1 modules"));
  EXPECT_TRUE(contains(error_of([&] { list(Tensor::ones({2})); }),
                       "ModuleList::forward: this module has no forward"));
  EXPECT_EQ(list[-1]->type_name(), "ReLU");
}

TEST(NnModule, TrainAndEvalReachEveryModule) {
  Nested model;
  auto all_modes = [&] {
    std::vector<bool> modes;
    model.apply([&](nn::Module& m) { modes.push_back(m.is_training()); });
    return modes;
  };
  std::vector<bool> modes = all_modes();
  EXPECT_TRUE(std::all_of(modes.begin(), modes.end(), [](bool b) { return b; }));
  model.eval();
  modes = all_modes();
  EXPECT_TRUE(std::none_of(modes.begin(), modes.end(), [](bool b) { return b; }));
  EXPECT_FALSE(model.blocks->operator[](1)->children()[0]->is_training());
  model.train();
  EXPECT_TRUE(model.drop->is_training());

  // Dropout: random zeros and 1 / (1 - p) scaling in training mode; the identity in evaluation mode.
  nn::Sequential net(std::make_shared<nn::Dropout>(0.5));
  Tensor x = Tensor::ones({8, 27});
  std::vector<float> dropped = net(x).to_vector<float>();
  size_t zeros = std::count(dropped.begin(), dropped.end(), 0.0f);
  EXPECT_EQ(zeros + std::count(dropped.begin(), dropped.end(), 2.0f), dropped.size());
  EXPECT_GT(zeros, 60u);
  EXPECT_LT(zeros, 156u);
  net.eval();
  EXPECT_EQ(net(x).impl(), x.impl());
}

// ------------------------------------------------------------------ initialization

TEST(NnInit, DefaultInitializationHasPyTorchsDistributions) {
  // U(-b, b) has mean 0 and variance b^2 / 3; the tolerances are about 5 standard errors.
  auto check_uniform = [](const Tensor& t, double bound, const std::string& what) {
    Moments m = moments_of(t);
    double n = static_cast<double>(t.numel());
    EXPECT_GE(m.min, -bound) << what;
    EXPECT_LE(m.max, bound) << what;
    EXPECT_GT(m.max, bound * (1 - 20 / n)) << what << " does not reach its bound";
    EXPECT_NEAR(m.mean, 0.0, 5 * bound / std::sqrt(3 * n)) << what;
    EXPECT_NEAR(m.var, bound * bound / 3, 5 * bound * bound * 0.3 / std::sqrt(n)) << what;
  };
  Tensor::manual_seed(10);
  nn::Linear linear(100, 200);
  check_uniform(linear.weight, 0.1, "Linear weight");
  check_uniform(linear.bias, 0.1, "Linear bias");
  EXPECT_EQ(linear.weight.shape(), (Shape{200, 100}));

  nn::Conv2d conv(16, 32, 3);  // fan_in 16 * 3 * 3 = 144
  check_uniform(conv.weight, 1.0 / 12, "Conv2d weight");
  check_uniform(conv.bias, 1.0 / 12, "Conv2d bias");
  nn::ConvTranspose2d deconv(32, 16, 3, 2, 0, 0, 1, false);  // weight [32, 16, 3, 3]: fan_in is 16 * 9 too
  EXPECT_EQ(deconv.weight.shape(), (Shape{32, 16, 3, 3}));
  check_uniform(deconv.weight, 1.0 / 12, "ConvTranspose2d weight");

  nn::Embedding embedding(100, 50);
  Moments e = moments_of(embedding.weight);
  EXPECT_NEAR(e.mean, 0.0, 5 / std::sqrt(5000.0));
  EXPECT_NEAR(e.var, 1.0, 5 * std::sqrt(2 / 5000.0));

  nn::BatchNorm2d bn(3);
  EXPECT_EQ(bn.weight.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.bias.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(bn.running_mean.to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(bn.running_var.to_vector<float>(), (std::vector<float>{1, 1, 1}));
  EXPECT_EQ(bn.num_batches_tracked.dtype(), kInt64);
  EXPECT_EQ(bn.num_batches_tracked.item<int64_t>(), 0);

  // The same seed gives the same model.
  Tensor::manual_seed(10);
  nn::Linear again(100, 200);
  EXPECT_EQ(again.weight.to_vector<float>(), linear.weight.to_vector<float>());
  EXPECT_EQ(again.bias.to_vector<float>(), linear.bias.to_vector<float>());

  // torch.nn.init's gains and fans (the layers above ran kaiming_uniform_, uniform_ and normal_).
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("leaky_relu", std::sqrt(5.0)), std::sqrt(1.0 / 3));
  EXPECT_DOUBLE_EQ(nn::init::calculate_gain("tanh"), 5.0 / 3);
  EXPECT_EQ(nn::init::calculate_fan_in_and_fan_out(conv.weight), (std::pair<int64_t, int64_t>{144, 288}));
  EXPECT_TRUE(contains(error_of([&] { nn::init::calculate_fan_in_and_fan_out(conv.bias); }),
                       "fewer than 2 dimensions, got shape {32}"));
  EXPECT_TRUE(contains(error_of([&] { nn::init::kaiming_uniform_(conv.weight, 0, "fan_avg"); }),
                       "mode \"fan_avg\" not supported"));
  EXPECT_TRUE(
      contains(error_of([&] { nn::init::calculate_gain("swish"); }), "unsupported nonlinearity \"swish\""));
}

TEST(NnInit, SkipInitAllocatesWithoutComputingOnItsThreadOnly) {
  GlobalCounters::reset();
  bool active_elsewhere = true;
  {
    nn::init::SkipInit skip;
    nn::Linear linear(100, 200);
    nn::Embedding padded(10, 4, 0);
    nn::Conv2d conv(3, 8, 3);
    EXPECT_TRUE(linear.weight.is_realized());
    EXPECT_TRUE(padded.weight.is_realized());
    EXPECT_EQ(linear.weight.shape(), (Shape{200, 100}));
    EXPECT_EQ(GlobalCounters::kernel_count, 0);  // allocated, nothing drawn
    std::thread([&] { active_elsewhere = nn::init::SkipInit::active(); }).join();
    EXPECT_TRUE(nn::init::SkipInit::active());
  }
  EXPECT_FALSE(active_elsewhere);
  EXPECT_FALSE(nn::init::SkipInit::active());
  Tensor::manual_seed(3);
  nn::Linear after(100, 200);  // initialized again once the guard is gone
  EXPECT_GT(GlobalCounters::kernel_count, 0);
  Moments m = moments_of(after.weight);
  EXPECT_GT(m.var, 0.1 * 0.1 / 3 * 0.8);
  EXPECT_LE(m.max, 0.1);
}

// ------------------------------------------------------------------ layers

TEST(NnLayers, EmbeddingLooksUpRowsAndPaddingGetsNoGradient) {
  Tensor::manual_seed(3);
  nn::Embedding embedding(10, 4, -10);  // padding_idx -10 is row 0
  ASSERT_EQ(embedding.padding_idx, 0);
  std::vector<float> w = embedding.weight.to_vector<float>();
  for (int j = 0; j < 4; j++) EXPECT_EQ(w[j], 0.0f);
  Tensor idx = Tensor::from_vector<int64_t>({0, 3, 9, 3}, {2, 2});
  Tensor out = embedding(idx);
  ASSERT_EQ(out.shape(), (Shape{2, 2, 4}));
  std::vector<float> o = out.to_vector<float>();
  int rows[] = {0, 3, 9, 3};
  for (int i = 0; i < 4; i++)
    for (int j = 0; j < 4; j++) EXPECT_EQ(o[i * 4 + j], w[rows[i] * 4 + j]);
  out.sum().backward();
  std::vector<float> g = embedding.weight.grad().to_vector<float>();
  for (int r = 0; r < 10; r++)
    for (int j = 0; j < 4; j++) EXPECT_EQ(g[r * 4 + j], r == 3 ? 2.0f : r == 9 ? 1.0f : 0.0f) << r;
  EXPECT_TRUE(contains(error_of([&] { embedding(Tensor::ones({2})); }),
                       "Embedding: expected integer indices, got float32"));
  EXPECT_TRUE(
      contains(error_of([&] { nn::Embedding(10, 4, 10); }), "padding_idx must be within num_embeddings"));
}

// Int8Linear: weights rounded to int8 per output row, dequantized in the product's one kernel.
TEST(NnLayers, Int8LinearQuantizesPerRowAndDequantizesInOneKernel) {
  Tensor::manual_seed(3);
  nn::Linear fp(64, 16);
  {
    NoGrad no_grad;
    fp.weight.narrow_assign(0, 5, Tensor::zeros({1, 64}));  // an all-zero row: scale 1, weights 0
  }
  nn::Int8Linear q8(fp);
  EXPECT_EQ(q8.weight.dtype(), kInt8);
  EXPECT_EQ(q8.weight.shape(), (Shape{16, 64}));
  EXPECT_TRUE(q8.parameters().empty()) << "buffers: no gradient";
  EXPECT_EQ(q8.memory_footprint().buffers, 16 * 64 + 16 * 4 + 16 * 4) << "int8 weights, scales, bias";
  EXPECT_EQ(fp.memory_footprint().parameters, 16 * 64 * 4 + 16 * 4);

  const std::vector<float> w = fp.weight.to_vector<float>(), s = q8.scale.to_vector<float>();
  const std::vector<int8_t> q = q8.weight.to_vector<int8_t>();
  for (int r = 0; r < 16; r++) {
    float row_max = 0;
    for (int c = 0; c < 64; c++) row_max = std::max(row_max, std::fabs(w[r * 64 + c]));
    EXPECT_FLOAT_EQ(s[r], r == 5 ? 1.0f : row_max / 127.0f) << "row " << r;
    int extreme = 0;
    for (int c = 0; c < 64; c++) {
      EXPECT_LE(std::fabs(q[r * 64 + c] * s[r] - w[r * 64 + c]), 0.5f * s[r] + 1e-7f) << r << ", " << c;
      extreme = std::max(extreme, std::abs(int(q[r * 64 + c])));
    }
    EXPECT_EQ(extreme, r == 5 ? 0 : 127) << "the row's largest weight is +-127";
  }

  Tensor x = Tensor::randn({8, 64});
  x.realize();
  std::vector<float> deq(16 * 64);
  for (int i = 0; i < 16 * 64; i++) deq[i] = static_cast<float>(q[i]) * s[i / 64];
  nn::Linear reference(64, 16);
  {
    NoGrad no_grad;
    reference.weight.assign(Tensor::from_vector(deq, {16, 64}));
    reference.bias.assign(fp.bias);
  }
  const std::vector<float> want = reference(x).to_vector<float>();
  GlobalCounters::reset();
  Tensor y = q8(x);
  y.realize();
  EXPECT_EQ(GlobalCounters::kernel_count, 1) << "the dequantization fuses into the product";
  EXPECT_LE(GlobalCounters::global_mem, 8 * 64 * 4 + 16 * 64 + 16 * 4 + 16 * 4 + 8 * 16 * 4)
      << "the weights are read as int8";
  const std::vector<float> got = y.to_vector<float>();
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::fabs(want[i]))) << i;
  // Against the float32 layer: within the rounding of the weights.
  const std::vector<float> exact = fp(x).to_vector<float>();
  for (size_t i = 0; i < got.size(); i++) EXPECT_NEAR(got[i], exact[i], 0.05f) << i;
  EXPECT_EQ(q8.to_string(), "Int8Linear(in_features=64, out_features=16, bias=True, dtype=torch.qint8)");
}

TEST(NnLayers, BadArgumentsAndInputsThrowNamingTheModule) {
  EXPECT_TRUE(contains(error_of([] { nn::Conv2d(3, 4, 3, 2, "same"); }),
                       "Conv2d: padding=\"same\" is not supported for strided convolutions"));
  EXPECT_TRUE(
      contains(error_of([] { nn::Conv2d(3, 4, 3, 1, "full"); }), "Conv2d: invalid padding string \"full\""));
  EXPECT_TRUE(contains(error_of([] { nn::Conv2d(3, 4, 3, 1, 0, 1, 2); }),
                       "Conv2d: in_channels must be divisible by groups, got in_channels=3, groups=2"));
  EXPECT_TRUE(contains(error_of([] {
                         nn::Conv2d(3, 4, {3, 3, 3});
                       }),
                       "Conv2d: kernel_size must be one value or 2"));
  EXPECT_TRUE(contains(error_of([] { nn::GroupNorm(3, 4); }),
                       "GroupNorm: num_channels must be divisible by num_groups"));
  EXPECT_TRUE(contains(error_of([] { nn::Dropout(1.5); }),
                       "Dropout: dropout probability has to be between 0 and 1, "
                       "but got 1.5"));
  EXPECT_TRUE(contains(error_of([] { nn::GELU("fast"); }), "GELU: approximate must be"));

  auto model = make_convnet();
  EXPECT_TRUE(contains(error_of([&] {
                         (*model)[0]->forward(Tensor::ones({2, 2, 6, 6}));
                       }),
                       "Conv2d: expected an input with 1 channels (in_channels), got shape {2, 2, 6, 6}"));
  EXPECT_TRUE(contains(error_of([&] {
                         (*model)[0]->forward(Tensor::ones({6, 6}));
                       }),
                       "Conv2d: expected a 3-D (unbatched) or 4-D (batched) input, got shape {6, 6}"));
  EXPECT_TRUE(contains(error_of([&] {
                         (*model)[1]->forward(Tensor::ones({2, 3, 6}));
                       }),
                       "BatchNorm2d: expected 4D input, got shape {2, 3, 6}"));
  EXPECT_TRUE(contains(error_of([&] {
                         (*model)[5]->forward(Tensor::ones({2, 26}));
                       }),
                       "Linear: expected an input of shape [*, 27] (in_features), got {2, 26}"));
  EXPECT_TRUE(contains(error_of([&] {
                         nn::BatchNorm1d(3)(Tensor::ones({2, 3, 4, 4}));
                       }),
                       "BatchNorm1d: expected 2D or 3D input"));
}

TEST(NnLayers, PrintsLikePyTorch) {
  // Shapes of the conv net's layers, so construction compiles no new kernel.
  nn::Sequential net(
      std::make_shared<nn::Conv2d>(1, 3, 3, 2, std::vector<int64_t>{1, 2}, 1, 1, false),
      std::make_shared<nn::LeakyReLU>(0.2), std::make_shared<nn::GELU>("tanh"),
      std::make_shared<nn::AvgPool2d>(2), std::make_shared<nn::LayerNorm>(std::vector<int64_t>{1, 3}),
      std::make_shared<nn::RMSNorm>(4), std::make_shared<nn::Softmax>(1), std::make_shared<nn::Identity>());
  EXPECT_EQ(net.to_string(),
            "Sequential(\n"
            "  (0): Conv2d(1, 3, kernel_size=(3, 3), stride=(2, 2), padding=(1, 2), bias=False)\n"
            "  (1): LeakyReLU(negative_slope=0.2)\n"
            "  (2): GELU(approximate='tanh')\n"
            "  (3): AvgPool2d(kernel_size=2, stride=2, padding=0)\n"
            "  (4): LayerNorm((1, 3), eps=1e-05, elementwise_affine=True)\n"
            "  (5): RMSNorm((4,), eps=None, elementwise_affine=True)\n"
            "  (6): Softmax(dim=1)\n"
            "  (7): Identity()\n"
            ")");
}
