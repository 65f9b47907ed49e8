// DDIM sampling (Song, Meng and Ermon, "Denoising Diffusion Implicit Models", 2021) with
// classifier-free guidance (Ho and Salimans, 2022), as Stable Diffusion v1.x samples:
//
//   the noise schedule   betas = linspace(sqrt(0.00085), sqrt(0.012), 1000)^2 (the LDM repository's
//                        "linear" schedule), alpha_bar[t] = prod_{s <= t} (1 - betas[s])
//   the steps            S of the 1000, evenly spaced: t_i = i * (1000 / S) + 1, run from the last
//   one step (eta = 0)   x0 = (x - sqrt(1 - a_t) e) / sqrt(a_t);  x <- sqrt(a_prev) x0 + sqrt(1 - a_prev) e
//                        with a_t = alpha_bar[t_i], a_prev = alpha_bar[t_{i-1}] (alpha_bar[0] for the last)
//   guidance             e = e_uncond + scale * (e_text - e_uncond), both from one UNet call on a batch
//                        of two (the empty prompt's context and the text's)
//
// Header-only and public API only. docs/stable_diffusion.md has the details.
#pragma once

#include <lazygrad/error.h>
#include <lazygrad/tensor.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace lazygrad::models {

struct NoiseSchedule {
  // Stable Diffusion v1.x's (linear_start, linear_end, timesteps of v1-inference.yaml).
  double linear_start = 0.00085;
  double linear_end = 0.012;
  int64_t timesteps = 1000;

  // alpha_bar[t] for t in [0, timesteps), in double precision (the repository computes it in
  // float64 too).
  std::vector<double> alphas_cumprod() const {
    std::vector<double> out(static_cast<size_t>(timesteps));
    const double a = std::sqrt(linear_start), b = std::sqrt(linear_end);
    double prod = 1.0;
    for (int64_t t = 0; t < timesteps; ++t) {
      const double s =
          timesteps == 1 ? a : a + (b - a) * static_cast<double>(t) / static_cast<double>(timesteps - 1);
      prod *= 1.0 - s * s;
      out[static_cast<size_t>(t)] = prod;
    }
    return out;
  }
};

// The S timesteps of a DDIM run, ascending: i * (timesteps / S) + 1. (The LDM repository takes
// range(0, timesteps, timesteps / S), which has one step more when S does not divide 1000; this is
// diffusers' "leading" spacing with steps_offset 1, the same steps where S divides 1000.)
inline std::vector<int64_t> ddim_timesteps(int64_t steps, int64_t timesteps = 1000) {
  if (steps < 1 || steps > timesteps)
    throw Error("DDIM: steps must be in [1, " + std::to_string(timesteps) + "], got " +
                std::to_string(steps));
  std::vector<int64_t> out;
  for (int64_t i = 0; i < steps; ++i) out.push_back(i * (timesteps / steps) + 1);
  return out;
}

// The DDIM update of x at a_t to a_prev, given the predicted noise e (eta = 0: no fresh noise).
inline Tensor ddim_step(const Tensor& x, const Tensor& e, double a_t, double a_prev) {
  Tensor x0 = (x - e * std::sqrt(1.0 - a_t)) * (1.0 / std::sqrt(a_t));
  return x0 * std::sqrt(a_prev) + e * std::sqrt(1.0 - a_prev);
}

// The noise prediction with guidance: unet(x, t, context) for a batch of latents; `uncond` and
// `cond` the contexts [1, T, dim] of the empty prompt and of the text. A scale of 1 is the text's
// prediction alone (one UNet call on a batch of one).
using NoisePredictor = std::function<Tensor(const Tensor& x, const Tensor& t, const Tensor& context)>;

inline Tensor guided_noise(const NoisePredictor& unet, const Tensor& x, int64_t t, const Tensor& uncond,
                           const Tensor& cond, double guidance_scale) {
  Tensor step = Tensor::from_vector<float>({static_cast<float>(t)}, {1});
  if (guidance_scale == 1.0) return unet(x, step, cond);
  std::vector<Tensor> e = unet(Tensor::cat({x, x}, 0), step, Tensor::cat({uncond, cond}, 0)).chunk(2, 0);
  return e[0] + (e[1] - e[0]) * guidance_scale;
}

// DDIM from the noise `x` (the latents at the last step) over `steps` steps; `on_step(i, x)` after
// each step (i from 1 to steps) gets the new latents, realized.
inline Tensor ddim_sample(const NoisePredictor& unet, Tensor x, const Tensor& uncond, const Tensor& cond,
                          int64_t steps, double guidance_scale, const NoiseSchedule& schedule = {},
                          const std::function<void(int64_t, const Tensor&)>& on_step = {}) {
  const std::vector<double> alpha_bar = schedule.alphas_cumprod();
  const std::vector<int64_t> ts = ddim_timesteps(steps, schedule.timesteps);
  for (int64_t i = steps; i-- > 0;) {
    const double a_t = alpha_bar[static_cast<size_t>(ts[static_cast<size_t>(i)])];
    const double a_prev =
        i > 0 ? alpha_bar[static_cast<size_t>(ts[static_cast<size_t>(i - 1)])] : alpha_bar[0];
    Tensor e = guided_noise(unet, x, ts[static_cast<size_t>(i)], uncond, cond, guidance_scale);
    x = ddim_step(x, e, a_t, a_prev).realize();
    if (on_step) on_step(steps - i, x);
  }
  return x;
}

}  // namespace lazygrad::models
