// The GPU calibration (tensor/gpu_calibration.h): a hand-made lease log of
// two steps, its fit worked by hand, the prediction's arithmetic, and the
// refusal of logs it cannot read.
#include <functional>

#include "tensor/gpu_calibration.h"
#include "tests/helpers.h"

using namespace ordo;
using Catch::Matchers::WithinRel;

namespace {

// Two steps of a made-up config, as `ordo bench step --parts --kernel-times`
// prints them. After: graphed 4.00 ms, eager 5.00 ms, 40 launches whose spans
// sum to 2.0 + 1.8 + 0.6 = 4.4 ms. Before: eager 10.00 ms, 50 launches, spans
// 8.0 + 1.5 = 9.5 ms.
const char* kLog = R"(ordo bench step: one pretraining step
per step:
config  batch x len   launches  step ms
toy         2 x 8    100 -> 40  10.00 -> 4.00

after with one part changed at a time, step ms (MEASURED; ...):
config  batch x len  after  eager (no graph)  eager, fp32 products
toy         2 x 8     4.00              5.00                  9.00

toy 2 x 8 after, one eager step kernel by kernel (MEASURED: CUDA events around each launch and
product, means of 10 steps; kernels of 0.5% of the sum or more): 40 launches, their spans' sum
4.400 ms, the timed step's wall time 5.500 ms (the events' own cost included; the gap is the device idle)
kernel                  calls     ms  us a call  share
cublas gemm (bf16)         10  2.000      200.0  45.5%
copy_rows_kernel<true>     20  1.800       90.0  40.9%
(the rest)                 10  0.600          -  13.6%

toy 2 x 8 before, one eager step kernel by kernel (MEASURED: CUDA events around each launch and
product, means of 10 steps; kernels of 0.5% of the sum or more): 50 launches, their spans' sum 9.500 ms,
the timed step's wall time 11.000 ms (the events' own cost included; the gap is the device idle)
kernel             calls     ms  us a call  share
cublas gemm (fp32)    10  8.000      800.0  84.2%
copy_kernel<true>     40  1.500       37.5  15.8%
)";

// The same steps' MODELED classes, as `ordo bench step --classes` prints them.
const char* kModeled = R"(
toy 2 x 8 after: MODELED by kernel class, 40 launches (roofline, no launch overhead)
class          calls  modeled us
copies            20       400.0
products_bf16     10      1000.0

toy 2 x 8 before: MODELED by kernel class, 50 launches (roofline, no launch overhead)
class          calls  modeled us  ratio  from  predicted us
copies            40      1100.0   1.00           1100.0
products_fp32     10      3950.0   1.00           3950.0
)";

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST_CASE("gpu calibration: the fit of a hand-made log, worked by hand", "[gpu_calibration]") {
  const std::vector<MeasuredStep> steps = parse_measured_log(kLog, "toy.log");
  REQUIRE(steps.size() == 2);
  CHECK(steps[0].label == "toy 2 x 8 after");
  CHECK(steps[0].graph_seconds == Approx(4.0e-3));
  CHECK(steps[0].eager_seconds == Approx(5.0e-3));
  CHECK(steps[1].eager_seconds == Approx(10.0e-3));
  CHECK(steps[1].graph_seconds < 0);
  CHECK(steps[1].launches == 50);
  CHECK(steps[1].spans_seconds == Approx(9.5e-3));
  // A table ends at its '(the rest)' row: the next run may follow without a blank line.
  std::string joined = kLog;
  joined.erase(joined.find("13.6%\n") + 6, 1);
  CHECK(parse_measured_log(joined, "toy.log").size() == 2);
  // Two runs of the same steps in one log (another setting): each kernel
  // table takes its own run's step times.
  std::string second = kLog;
  second.replace(second.find("10.00 -> 4.00"), 13, "10.00 -> 7.00");
  const std::vector<MeasuredStep> both = parse_measured_log(std::string(kLog) + second, "toy.log");
  REQUIRE(both.size() == 4);
  CHECK(both[0].graph_seconds == Approx(4.0e-3));
  CHECK(both[2].label == "toy 2 x 8 after");
  CHECK(both[2].graph_seconds == Approx(7.0e-3));

  const Calibration c = fit_calibration(steps, parse_modeled_log(kModeled, "toy_modeled.log"), "toy GPU", {"toy.log"});
  // The events' cost a launch: (4.4 - 4.0) ms over 40 launches = 10 us.
  CHECK_THAT(c.event_seconds_per_launch, WithinRel(10e-6, 1e-9));
  // Device time: each class's spans less 10 us a call.
  // bf16 products: (2.0 - 0.1) ms / 1.0 ms modeled = 1.9.
  CHECK_THAT(c.classes.at("products_bf16").ratio, WithinRel(1.9, 1e-9));
  // fp32 products: (8.0 - 0.1) / 3.95 = 2.
  CHECK_THAT(c.classes.at("products_fp32").ratio, WithinRel(2.0, 1e-9));
  // copies, both steps pooled: ((1.8 - 0.2) + (1.5 - 0.4)) / (0.4 + 1.1) = 2.7 / 1.5 = 1.8.
  CHECK_THAT(c.classes.at("copies").ratio, WithinRel(1.8, 1e-9));
  CHECK_THAT(c.classes.at("copies").measured_seconds, WithinRel(2.7e-3, 1e-9));
  // (the rest): (0.6 - 0.1) ms over the listed 1.9 + 1.6 + 7.9 + 1.1 = 12.5 ms.
  CHECK_THAT(c.unlisted_fraction, WithinRel(0.04, 1e-9));
  // The eager gap: after 5.0 - (4.4 - 0.4) = 1.0 ms, before 10.0 - (9.5 - 0.5)
  // = 1.0 ms, over 40 + 50 launches.
  CHECK_THAT(c.eager_gap_seconds_per_launch, WithinRel(2e-3 / 90, 1e-9));

  // The copies fitted on the before step alone: (1.5 - 0.4) / 1.1 = 1; the
  // rest as before, the unlisted share still over every listed kernel.
  const Calibration on_before = fit_calibration(steps, parse_modeled_log(kModeled, "toy_modeled.log"), "toy GPU",
                                                {"toy.log"}, {{"copies", "before"}});
  CHECK_THAT(on_before.classes.at("copies").ratio, WithinRel(1.0, 1e-9));
  CHECK_THAT(on_before.classes.at("products_bf16").ratio, WithinRel(1.9, 1e-9));
  CHECK_THAT(on_before.unlisted_fraction, WithinRel(0.04, 1e-9));
  CHECK(parse_calibration(format_calibration(on_before), "x").fit_on == std::map<std::string, std::string>{{"copies", "before"}});

  // Written and read back, to the file's precision.
  const Calibration back = parse_calibration(format_calibration(c), "toy.calibration");
  CHECK(back.device == "toy GPU");
  CHECK(back.sources == std::vector<std::string>{"toy.log"});
  CHECK_THAT(back.classes.at("copies").ratio, WithinRel(1.8, 1e-3));
  CHECK_THAT(back.eager_gap_seconds_per_launch, WithinRel(2e-3 / 90, 1e-3));
}

TEST_CASE("gpu calibration: the predicted step, worked by hand, an unmeasured class flagged", "[gpu_calibration]") {
  Calibration c;
  c.classes["products_bf16"] = {1.9, 0, 0};
  c.classes["copies"] = {1.8, 0, 0};
  c.unlisted_fraction = 0.04;
  c.eager_gap_seconds_per_launch = 20e-6;
  ClassTimes modeled;
  modeled.seconds = {{"products_bf16", 1000e-6}, {"copies", 400e-6}, {"attention_tiles", 100e-6}};
  modeled.launches = 40;
  const Prediction p = predict(modeled, c);
  // (1.9 x 1000 + 1.8 x 400 + 1.9 x 100) us x 1.04 = 2810 x 1.04 = 2922.4 us;
  // eager: 40 launches x 20 us more.
  CHECK_THAT(p.graph_seconds, WithinRel(2922.4e-6, 1e-9));
  CHECK_THAT(p.eager_seconds, WithinRel(2922.4e-6 + 800e-6, 1e-9));
  CHECK(p.flagged);
  for (const ClassPrediction& k : p.classes) {
    CHECK(k.ratio_from == (k.kernel_class == "attention_tiles" ? "products_bf16" : k.kernel_class));
    if (k.kernel_class == "copies") CHECK_THAT(k.predicted_seconds, WithinRel(1.8 * 400e-6 * 1.04, 1e-9));
  }
  // A class rewritten since the lease: this code's step takes its nearest
  // measured class's ratio (scatter_adds: elementwise's), flagged; the logs'
  // own step (what their binaries ran) its fitted one.
  Calibration changed = c;
  changed.classes["scatter_adds"] = {16.0, 0, 0};
  changed.classes["elementwise"] = {1.5, 0, 0};
  changed.changed["scatter_adds"] = "runs added in pieces since";
  ClassTimes with_scatter;
  with_scatter.seconds = {{"copies", 400e-6}, {"scatter_adds", 50e-6}};
  const Prediction now = predict(with_scatter, changed);
  // (1.8 x 400 + 1.5 x 50) us x 1.04 = 795 x 1.04 = 826.8 us.
  CHECK_THAT(now.graph_seconds, WithinRel(826.8e-6, 1e-9));
  CHECK(now.flagged);
  CHECK(now.classes.at(1).ratio_from == "elementwise");
  // (1.8 x 400 + 16 x 50) us x 1.04 = 1520 x 1.04 = 1580.8 us.
  const Prediction then = predict(with_scatter, changed, PredictionOf::measured_binaries);
  CHECK_THAT(then.graph_seconds, WithinRel(1580.8e-6, 1e-9));
  CHECK_FALSE(then.flagged);
  const Calibration read_back = parse_calibration(format_calibration(changed), "x");
  CHECK(read_back.changed == std::map<std::string, std::string>{{"scatter_adds", "runs added in pieces since"}});
  // A changed class with no nearer class to take a ratio from is refused.
  changed.changed["copies"] = "rewritten";
  CHECK_THAT(error_of([&] { predict(with_scatter, changed); }),
             Catch::Matchers::Contains("'copies' changed since the lease and has no nearest measured class"));

  // A class with neither its own ratio nor its nearest class's is refused.
  modeled.seconds["optimizer"] = 1e-6;
  CHECK_THAT(error_of([&] { predict(modeled, c); }), Catch::Matchers::Contains("no ratio for the kernel class 'optimizer'"));
}

TEST_CASE("gpu calibration: recorded calls and CUDA kernels go to the same classes", "[gpu_calibration]") {
  KernelCall gemm;
  gemm.kernel = "gemm";
  gemm.precision = MatmulPrecision::bf16;
  CHECK(kernel_class(gemm) == "products_bf16");
  CHECK(measured_kernel_class("cublas gemm (bf16)") == "products_bf16");
  KernelCall tiles;  // backward: tables, extra, causal, tiles
  tiles.kernel = "attention_backward";
  tiles.integers = {0, 0, 0, 1};
  CHECK(kernel_class(tiles) == "attention_tiles");
  CHECK(nearest_measured_class("attention_tiles") == "products_bf16");
  KernelCall layernorm;
  layernorm.kernel = "residual_layernorm_backward";
  CHECK(kernel_class(layernorm) == "rows");
  // Its column sums are launched by it: the same class.
  CHECK(measured_kernel_class("column_partials_kernel<Element>") == "rows");
  CHECK(measured_kernel_class("residual_layernorm_backward_kernel<true>") == "rows");
}

TEST_CASE("gpu calibration: a log it cannot read is refused, naming file, line and what", "[gpu_calibration]") {
  std::string bad = kLog;
  bad.replace(bad.find("copy_rows_kernel<true>     20"), 29, "copy_rows_kernel<true>     zz");
  CHECK_THAT(error_of([&] { parse_measured_log(bad, "toy.log"); }),
             Catch::Matchers::Contains("toy.log:15: a kernel table row that does not parse") &&
                 Catch::Matchers::Contains("copy_rows_kernel<true>     zz"));

  std::string unknown = kLog;
  unknown.replace(unknown.find("copy_kernel<true>"), 17, "mystery_kernel<3>");
  CHECK_THAT(error_of([&] { parse_measured_log(unknown, "toy.log"); }),
             Catch::Matchers::Contains("toy.log:23: gpu calibration: no kernel class for the CUDA kernel "
                                       "'mystery_kernel<3>'"));

  std::string emulated = kLog;
  emulated.replace(emulated.find("(MEASURED: CUDA"), 15, "(MEASURED on the emulated GPU: the CPU's time, not a GPU's: CUDA");
  CHECK_THAT(error_of([&] { parse_measured_log(emulated, "toy.log"); }),
             Catch::Matchers::Contains("toy.log:10: the kernel times of 'toy 2 x 8 after' were measured on the "
                                       "emulated GPU"));

  CHECK_THAT(error_of([&] { parse_measured_log("nothing here\n", "empty.log"); }),
             Catch::Matchers::Contains("empty.log: no step timed"));

  std::string no_twin = kModeled;
  no_twin.erase(no_twin.find("toy 2 x 8 before"));
  CHECK_THAT(error_of([&] {
               fit_calibration(parse_measured_log(kLog, "toy.log"), parse_modeled_log(no_twin, "m.log"), "", {});
             }),
             Catch::Matchers::Contains("the measured step 'toy 2 x 8 before' has no modeled class table"));

  CHECK_THAT(error_of([&] {
               parse_calibration("event_us_per_launch 1\neager_gap_us_per_launch x\nunlisted_fraction 0\n", "c.txt");
             }),
             Catch::Matchers::Contains("c.txt:2: 'eager_gap_us_per_launch' wants a non-negative number, not 'x'"));
  CHECK_THAT(error_of([&] { parse_calibration("event_us_per_launch 1\nclass copies 1.5\n", "c.txt"); }),
             Catch::Matchers::Contains("c.txt:2: a class line is 'class NAME RATIO MEASURED_MS MODELED_MS'"));
}
