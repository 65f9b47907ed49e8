// The tensor cores' product (codegen/tensor_cores.h), rendered whole in a C-family language.
//
// A work-group is four warps of 32; warp w of group g computes warp tile 4 g + w: a (16 T) x (8 T)
// block of C at one batch index, as T x T tiles of mma.sync.m16n8k16, stepping K by 16. The
// fragments are PTX's (ISA, "Matrix Fragments for mma.m16n8k16", float16 and bfloat16), with lane
// = 4 gq + tq:
//   A, 4 registers of 2 values: register r holds row gq + 8 (r & 1), columns tq*2 + 8 (r >> 1) + {0, 1}
//   B, 2 registers of 2 values: register r holds rows tq*2 + 8 r + {0, 1}, column gq
//   C, 4 floats: value r is row gq + 8 (r >> 1), column tq*2 + (r & 1)
// the lower-numbered column (row, for B) in a register's low 16 bits. A language with the
// instruction (CUDA) supplies lg_mma_f16 / lg_mma_bf16; elsewhere (OpenCL, to test these kernels on
// a CPU) the warp's fragments go through local memory and each work-item computes its four values
// from them, in the same layout, so an index the kernel gets wrong fails there as it would on a GPU.
//
// A warp past the last tile computes the last tile again and does not store (every work-item of
// the group reaches every barrier of the emulation).
#include <algorithm>
#include <climits>
#include <cstdlib>
#include <sstream>

#include "codegen/tensor_cores.h"
#include "renderer/c_style.h"
#include "runtime/buffer.h"

namespace lazygrad {

namespace {

std::string num(int64_t v) { return std::to_string(v); }

// `var += coef * (expr)`, or nothing for a zero coefficient.
std::string add_term(const std::string& var, int64_t coef, const std::string& expr) {
  if (coef == 0) return "";
  return var + " += " + num(coef) + " * (" + expr + "); ";
}

}  // namespace

std::string render_tensor_core(const CStyleLanguage& lang, const Kernel& k) {
  const TensorCoreTile& tc = *k.tensor_core;
  const TensorCoreMatch& m = tc.match;
  const int64_t t = tc.t, warps = TensorCoreTile::kWarps, tiles = tc.tiles();
  const int64_t mt_count = m.size(m.m_axis) / (16 * t), nt_count = m.size(m.n_axis) / (8 * t);
  const size_t ma = m.m_axis, na = m.n_axis, ka = m.k_axis;
  const bool f16 = m.operand == kFloat16;
  const std::string mma = f16 ? "lg_mma_f16" : "lg_mma_bf16", widen = f16 ? "lg_h2f" : "lg_bf2f";
  const bool native = lang.helpers.count(mma) != 0;
  const std::string unroll = native ? "#pragma unroll\n" : "";
  const std::string a = "data" + num(m.a_param), b = "data" + num(m.b_param), c = "data" + num(m.c_param);
  const std::string tn = num(t);
  // Offsets in 32-bit arithmetic where every one the kernel forms fits (a GPU's integer units are
  // 32 bits wide; 64-bit products take several instructions).
  int64_t largest = 0;
  for (const AffineIndex* x : {&m.a, &m.b, &m.c}) {
    int64_t hi = x->base;
    for (size_t i = 0; i < x->coef.size(); i++) hi += std::abs(x->coef[i]) * (m.size(i) - 1);
    largest = std::max(largest, hi + 16);
  }
  const std::string ix = largest < INT32_MAX ? "int" : "int64_t";

  std::ostringstream os;
  os << "\n" << kernel_head_prefix(lang, k) << k.name << "(";
  for (size_t i = 0; i < k.buffers.size(); i++) {
    const DType dt = k.buffers[i]->dtype;
    const std::string type = dt == kBool                         ? lang.bool_storage
                             : dt == kFloat16 || dt == kBFloat16 ? "uint16_t"
                             : dt == kFloat32
                                 ? "float"
                                 : "int64_t";  // never read: a product's buffers are the three above
    os << lang.buffer_prefix << (k.written[i] ? "" : "const ") << type << "* " << lang.restrict_kw << " data"
       << i << ", ";
  }
  for (size_t i = 0; i < k.vars.size(); i++) os << "long var" << i << "_bits, ";
  os << lang.buffer_prefix << "int* lg_err, uint lg_launch) {\n";
  os << "  (void)lg_err;\n  (void)lg_launch;\n";
  if (!native)
    os << "  " << lang.local_prefix << "uint32_t lg_sa[" << warps << "][32][4];\n  " << lang.local_prefix
       << "uint32_t lg_sb[" << warps << "][32][2];\n";
  os << "  const " << ix << " lid = " << lang.local_id
     << ", warp = lid >> 5, lane = lid & 31, gq = lane >> 2, tq = lane & 3;\n"
     << "  " << ix << " tile = " << lang.group_id << " * " << warps << " + warp;\n"
     << "  const int valid = tile < " << tiles << ";\n"
     << "  if (!valid) tile = " << tiles - 1 << ";\n"
     << "  const " << ix << " nt = tile % " << nt_count << ", mt = tile / " << nt_count << " % " << mt_count
     << ";\n"
     << "  " << ix << " rest = tile / " << nt_count * mt_count << ";\n"
     << "  " << ix << " ao = " << m.a.base << ", bo = " << m.b.base << ", co = " << m.c.base << ";\n";
  for (size_t j = m.batch_axes.size(); j-- > 0;) {  // the innermost batch axis varies fastest
    const size_t x = m.batch_axes[j];
    os << "  {\n    const " << ix << " i = rest % " << m.size(x) << ";\n    rest /= " << m.size(x)
       << ";\n    " << add_term("ao", m.a.coef[x], "i") << add_term("bo", m.b.coef[x], "i")
       << add_term("co", m.c.coef[x], "i") << "\n  }\n";
  }
  os << "  " << add_term("ao", m.a.coef[ma], "mt * " + num(16 * t))
     << add_term("bo", m.b.coef[na], "nt * " + num(8 * t))
     << add_term("co", m.c.coef[ma], "mt * " + num(16 * t))
     << add_term("co", m.c.coef[na], "nt * " + num(8 * t)) << "\n";
  os << "  float acc[" << tn << "][" << tn << "][4];\n"
     << unroll << "  for (int i = 0; i < " << tn << "; i++)\n"
     << unroll << "    for (int j = 0; j < " << tn << "; j++)\n"
     << unroll << "      for (int r = 0; r < 4; r++) acc[i][j][r] = 0.0f;\n";
  os << "  for (" << ix << " k0 = 0; k0 < " << m.size(ka) << "; k0 += 16) {\n"
     << "    uint32_t fa[" << tn << "][4], fb[" << tn << "][2];\n"
     << unroll << "    for (int i = 0; i < " << tn << "; i++)\n"
     << unroll << "      for (int r = 0; r < 4; r++) {\n"
     << "        const " << ix << " p = ao + (i * 16 + gq + 8 * (r & 1)) * " << m.a.coef[ma]
     << " + (k0 + tq * 2 + 8 * (r >> 1)) * " << m.a.coef[ka] << ";\n"
     << "        fa[i][r] = (uint32_t)" << a << "[p] | ((uint32_t)" << a << "[p + " << m.a.coef[ka]
     << "] << 16);\n"
     << "      }\n"
     << unroll << "    for (int j = 0; j < " << tn << "; j++)\n"
     << unroll << "      for (int r = 0; r < 2; r++) {\n"
     << "        const " << ix << " p = bo + (k0 + tq * 2 + 8 * r) * " << m.b.coef[ka] << " + (j * 8 + gq) * "
     << m.b.coef[na] << ";\n"
     << "        fb[j][r] = (uint32_t)" << b << "[p] | ((uint32_t)" << b << "[p + " << m.b.coef[ka]
     << "] << 16);\n"
     << "      }\n";
  if (native) {
    os << unroll << "    for (int i = 0; i < " << tn << "; i++)\n"
       << unroll << "      for (int j = 0; j < " << tn << "; j++) " << mma << "(acc[i][j], fa[i], fb[j]);\n";
  } else {
    // The warp's fragments side by side in local memory; each work-item takes the 16 products of
    // each of its four values from them, by the layout above read backwards.
    os << "    for (int i = 0; i < " << tn << "; i++)\n"
       << "      for (int j = 0; j < " << tn << "; j++) {\n"
       << "        for (int r = 0; r < 4; r++) lg_sa[warp][lane][r] = fa[i][r];\n"
       << "        for (int r = 0; r < 2; r++) lg_sb[warp][lane][r] = fb[j][r];\n"
       << "        " << lang.barrier << "\n"
       << "        for (int r = 0; r < 4; r++) {\n"
       << "          const " << ix << " row = gq + 8 * (r >> 1), col = tq * 2 + (r & 1);\n"
       << "          float s = 0.0f;\n"
       << "          for (int kk = 0; kk < 16; kk++) {\n"
       << "            const uint32_t wa = lg_sa[warp][(row & 7) * 4 + (kk & 7) / 2][(row >> 3) + 2 * (kk >> "
          "3)];\n"
       << "            const uint32_t wb = lg_sb[warp][col * 4 + (kk & 7) / 2][kk >> 3];\n"
       << "            s += " << widen << "((uint16_t)(wa >> (16 * (kk & 1)))) * " << widen
       << "((uint16_t)(wb >> (16 * (kk & 1))));\n"
       << "          }\n"
       << "          acc[i][j][r] += s;\n"
       << "        }\n"
       << "        " << lang.barrier << "\n"
       << "      }\n";
  }
  os << "  }\n";
  const std::string narrow = m.out == kFloat16 ? "lg_f2h" : m.out == kBFloat16 ? "lg_f2bf" : "";
  os << "  if (!valid) return;\n"
     << unroll << "  for (int i = 0; i < " << tn << "; i++)\n"
     << unroll << "    for (int j = 0; j < " << tn << "; j++)\n"
     << unroll << "      for (int r = 0; r < 4; r++)\n"
     << "        " << c << "[co + (i * 16 + gq + 8 * (r >> 1)) * " << m.c.coef[ma]
     << " + (j * 8 + tq * 2 + (r & 1)) * " << m.c.coef[na]
     << "] = " << (narrow.empty() ? "acc[i][j][r]" : narrow + "(acc[i][j][r])") << ";\n"
     << "}\n";
  const std::string kernel = os.str();
  std::string helpers = helper_definitions(lang, kernel);
  if (native) helpers += lang.helpers.at(mma);
  return lang.preamble + helpers + kernel;
}

}  // namespace lazygrad
