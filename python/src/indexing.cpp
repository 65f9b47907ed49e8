// Tensor.__getitem__ and __setitem__ with numpy's rules: ints, slices (any step, negative ones
// too), None, Ellipsis, and integer tensors, lists or arrays (advanced indexing: the index tensors
// broadcast together; their dimensions replace the indexed ones where these are adjacent, and go
// first otherwise). Basic indexing gives views; __setitem__ assigns through them.
#include <string>

#include "bindings.h"

namespace lazygrad::python {

namespace {

enum class Kind { Int, Slice, None, Ellipsis, Tensor };

struct Item {
  Kind kind;
  py::handle h;
  int64_t i = 0;
};

bool is_int(py::handle h) {
  // Leaked on purpose: destroying it after the interpreter is finalized would crash at exit.
  static py::object& integer = *new py::object(numpy().attr("integer"));
  return (PyLong_Check(h.ptr()) && !PyBool_Check(h.ptr())) || py::isinstance(h, integer);
}

// lazygrad.LazygradIndexError: an IndexError that is also a LazygradError.
[[noreturn]] void index_error(const std::string& m) { throw IndexError(m); }

// A list, tuple or numpy array of integers as an int64 index tensor, range-checked against n.
Tensor index_tensor(py::handle h, int64_t n) {
  if (py::isinstance<Tensor>(h)) {
    Tensor t = h.cast<Tensor>();
    if (t.dtype() == kBool)
      index_error("indexing with a bool mask is not supported (its shape depends on the values)");
    if (!is_int(t.dtype()))
      index_error("tensors used as indices must be integers, got " + std::string(dtype_name(t.dtype())));
    return t;
  }
  py::array a = numpy().attr("asarray")(h);
  char kind = a.dtype().kind();
  if (kind == 'b')
    index_error("indexing with a bool mask is not supported (its shape depends on the values)");
  if (a.size() == 0)
    a = a.attr("astype")("i8");
  else if (kind != 'i' && kind != 'u')
    index_error("only integers, slices, None, Ellipsis and integer tensors are valid indices");
  if (a.size() > 0) {
    auto lo = a.attr("min")().cast<int64_t>(), hi = a.attr("max")().cast<int64_t>();
    if (lo < -n || hi >= n)
      index_error("index " + std::to_string(lo < -n ? lo : hi) +
                  " is out of bounds for a dimension of size " + std::to_string(n));
  }
  return to_tensor(a, kInt64);
}

std::vector<Item> parse(const Tensor& t, py::handle index) {
  std::vector<py::handle> entries;
  if (PyTuple_Check(index.ptr())) {
    for (py::handle h : py::reinterpret_borrow<py::tuple>(index)) entries.push_back(h);
  } else {
    entries.push_back(index);
  }
  std::vector<Item> items;
  int64_t consumed = 0, ellipses = 0;
  for (py::handle h : entries) {
    if (h.is_none())
      items.push_back({Kind::None, h});
    else if (h.ptr() == Py_Ellipsis)
      items.push_back({Kind::Ellipsis, h}), ellipses++;
    else if (PySlice_Check(h.ptr()))
      items.push_back({Kind::Slice, h}), consumed++;
    else if (PyBool_Check(h.ptr()))
      index_error("indexing with a bool is not supported");
    else if (is_int(h))
      items.push_back({Kind::Int, h, h.cast<int64_t>()}), consumed++;
    else if (py::isinstance<Tensor>(h) || py::isinstance<py::list>(h) || py::isinstance<py::tuple>(h) ||
             py::isinstance<py::array>(h))
      items.push_back({Kind::Tensor, h}), consumed++;
    else if (py::isinstance<py::str>(h))
      throw TypeError("a str is not an index: only integers, slices, None, Ellipsis and integer tensors are");
    else
      throw IndexError(  // PyTorch: IndexError for an index of another type it does not take
          "only integers, slices, None, Ellipsis and integer tensors are valid indices, got " +
          py::str(py::type::of(h)).cast<std::string>());
  }
  if (ellipses > 1) index_error("an index can only have a single ellipsis ('...')");
  if (consumed > t.ndim())
    index_error("too many indices for a tensor of dimension " + std::to_string(t.ndim()) + ": " +
                std::to_string(consumed) + " were given");
  // The ellipsis stands for the dimensions nothing else takes; without one they are at the end.
  std::vector<Item> out;
  for (auto& it : items) {
    if (it.kind == Kind::Ellipsis) {
      for (int64_t k = 0; k < t.ndim() - consumed; k++) out.push_back({Kind::Slice, py::none()});
    } else {
      out.push_back(it);
    }
  }
  return out;
}

}  // namespace

Tensor getitem(const Tensor& t, py::handle index) {
  std::vector<Item> items = parse(t, index);
  bool any_tensor = false;
  for (const auto& it : items) any_tensor |= it.kind == Kind::Tensor;
  Tensor x = t;
  int64_t d = 0;
  std::vector<std::pair<int64_t, Tensor>> adv;  // (dimension of x, index tensor)
  for (const auto& it : items) {
    switch (it.kind) {
      case Kind::None:
        x = x.unsqueeze(d++);
        break;
      case Kind::Ellipsis:
        break;
      case Kind::Int: {
        int64_t n = x.shape()[d];
        if (it.i < -n || it.i >= n)
          index_error("index " + std::to_string(it.i) + " is out of bounds for dimension " +
                      std::to_string(d) + " with size " + std::to_string(n));
        // With advanced indices present an int is one of them (numpy's rule for where dims go).
        if (any_tensor)
          adv.emplace_back(d++, Tensor::full({}, it.i, kInt64));
        else
          x = x.select(d, it.i);
        break;
      }
      case Kind::Slice: {
        int64_t n = x.shape()[d];
        if (it.h.is_none()) {
          d++;
          break;
        }
        Py_ssize_t start, stop, step;
        if (PySlice_Unpack(it.h.ptr(), &start, &stop, &step) < 0) {
          if (!PyErr_ExceptionMatches(PyExc_ValueError)) throw py::error_already_set();
          PyErr_Clear();  // a step of 0: a LazygradValueError, as PyTorch's ValueError
          throw ValueError("index: slice step cannot be zero, indexing shape " + shape_str(t.shape()));
        }
        int64_t len = PySlice_AdjustIndices(n, &start, &stop, step);
        if (step > 0) {
          if (!(start == 0 && step == 1 && len == n))
            x = len == 0 ? x.slice(d, 0, 0) : x.slice(d, start, start + (len - 1) * step + 1, step);
        } else {
          x = x.flip(Axes(d));
          int64_t s = n - 1 - start;
          x = len == 0 ? x.slice(d, 0, 0) : x.slice(d, s, s + (len - 1) * -step + 1, -step);
        }
        d++;
        break;
      }
      case Kind::Tensor: {
        adv.emplace_back(d, index_tensor(it.h, x.shape()[d]));
        d++;
        break;
      }
    }
  }
  if (adv.empty()) return x;
  if (adv.size() == 1) return x.index(adv[0].first, adv[0].second);
  // Several: move the indexed dimensions together (where the first one is when they are adjacent,
  // to the front otherwise), merge them into one, and index that with the combined flat index.
  bool adjacent = true;
  for (size_t k = 1; k < adv.size(); k++) adjacent &= adv[k].first == adv[k - 1].first + 1;
  int64_t p = adjacent ? adv[0].first : 0;
  std::vector<bool> is_adv(x.ndim(), false);
  for (const auto& a : adv) is_adv[a.first] = true;
  Shape order, rest;
  for (int64_t k = 0; k < x.ndim(); k++)
    if (!is_adv[k]) rest.push_back(k);
  order.insert(order.end(), rest.begin(), rest.begin() + p);
  for (const auto& a : adv) order.push_back(a.first);
  order.insert(order.end(), rest.begin() + p, rest.end());
  Shape sizes = x.shape();
  x = x.permute(order);
  Shape merged(x.shape().begin(), x.shape().begin() + p);
  int64_t total = 1;
  for (const auto& a : adv) total *= sizes[a.first];
  merged.push_back(total);
  merged.insert(merged.end(), x.shape().begin() + p + static_cast<int64_t>(adv.size()), x.shape().end());
  x = x.reshape(merged);
  Tensor flat;
  int64_t stride = total;
  for (const auto& [dim, idx] : adv) {
    int64_t n = sizes[dim];
    stride /= n;
    // The positions idx reads along dim, negative ones counted from the end: an arange laid along
    // dim, indexed by idx. Through x.index each value is checked against its own dimension (an
    // error at realize naming it), which the merged flat index alone could not do.
    Shape along(sizes.size(), 1);
    along[dim] = n;
    Tensor term = Tensor::arange(n, kInt64).reshape(along).index(dim, idx).reshape(idx.shape()) * stride;
    flat = flat.defined() ? flat + term : term;
  }
  return x.index(p, flat);
}

void setitem(Tensor& t, py::handle index, py::handle value) {
  Tensor v;
  if (py::isinstance<Tensor>(value))
    v = value.cast<Tensor>();
  else if (auto s = to_scalar(value))
    v = Tensor::full({}, *s, t.dtype());
  else
    v = to_tensor(value, t.dtype());
  bool advanced = false;
  for (const auto& it : parse(t, index)) advanced |= it.kind == Kind::Tensor;
  if (!advanced) {
    Tensor view = getitem(t, index);  // a view of t's data: assigning to it writes t
    view.assign(v);
    return;
  }
  // Advanced: the flat positions the index selects, then one scatter (the last write wins).
  Tensor positions = getitem(Tensor::arange(t.numel(), kInt64).reshape(t.shape()), index);
  Tensor vals = v.to(t.dtype()).expand(positions.shape()).flatten();
  t.assign(t.flatten().scatter(0, positions.flatten(), vals).reshape(t.shape()));
}

void bind_indexing(TensorClass& cls) {
  cls.def("__getitem__", &getitem, py::arg("index"))
      .def("__setitem__", [](Tensor& t, py::handle index, py::handle value) { setitem(t, index, value); });
}

}  // namespace lazygrad::python
