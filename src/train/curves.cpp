#include "train/curves.hpp"

#include <algorithm>
#include <cmath>
#include <cstdarg>
#include <filesystem>
#include <system_error>
#include <utility>

#include "io/file.hpp"
#include "meganeura/error.hpp"

namespace meganeura {

namespace {

using Points = std::vector<std::pair<double, double>>;

std::string fmt(const char* f, ...) __attribute__((format(printf, 1, 2)));
std::string fmt(const char* f, ...) {
  char buf[512];
  va_list ap;
  va_start(ap, f);
  std::vsnprintf(buf, sizeof buf, f, ap);
  va_end(ap);
  return buf;
}

// An axis from lo to hi with ticks every `step` (1, 2 or 5 times a power of ten).
struct Axis {
  double lo, hi, step;
  std::vector<double> ticks() const {
    std::vector<double> t;
    for (double v = std::ceil(lo / step - 1e-9) * step; v <= hi + step * 1e-9; v += step) t.push_back(v);
    return t;
  }
  std::string label(double v) const {
    int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step) + 1e-9)));
    return fmt("%.*f", decimals, std::abs(v) < step * 1e-9 ? 0.0 : v);
  }
};

double nice_step(double range, int target) {
  double raw = range / target, mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0})
    if (m * mag >= raw) return m * mag;
  return 10 * mag;
}

// Extends [lo, hi] outwards to whole ticks.
Axis nice_axis(double lo, double hi, int target = 5) {
  if (!(hi > lo)) {
    lo -= 0.5;
    hi += 0.5;
  }
  double step = nice_step(hi - lo, target);
  return {std::floor(lo / step + 1e-9) * step, std::ceil(hi / step - 1e-9) * step, step};
}

// One plot area of the image: data coordinates to pixels, and the frame drawn around it.
struct Panel {
  double left, top, width, height;
  Axis x, y;
  double px(double v) const { return left + (v - x.lo) / (x.hi - x.lo) * width; }
  double py(double v) const { return top + height - (v - y.lo) / (y.hi - y.lo) * height; }

  std::string frame(const std::string& title, const std::string& xlabel, const std::string& ylabel) const {
    std::string s;
    for (double t : y.ticks()) {
      s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='grid'/>\n", left, py(t), left + width, py(t));
      s += fmt("<text x='%.1f' y='%.1f' text-anchor='end'>%s</text>\n", left - 6, py(t) + 4, y.label(t).c_str());
    }
    for (double t : x.ticks()) {
      s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='axis'/>\n", px(t), top + height, px(t),
               top + height + 5);
      s +=
          fmt("<text x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n", px(t), top + height + 18, x.label(t).c_str());
    }
    s += fmt("<rect x='%.1f' y='%.1f' width='%.1f' height='%.1f' class='axis' fill='none'/>\n", left, top, width,
             height);
    s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle' class='title'>%s</text>\n", left + width / 2, top - 14,
             title.c_str());
    s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle'>%s</text>\n", left + width / 2, top + height + 38,
             xlabel.c_str());
    s += fmt("<text transform='translate(%.1f %.1f) rotate(-90)' text-anchor='middle'>%s</text>\n", left - 46,
             top + height / 2, ylabel.c_str());
    return s;
  }

  std::string polyline(const Points& pts, const std::string& cls) const {
    std::string s = "<polyline class='" + cls + "' points='";
    for (auto [a, b] : pts) s += fmt("%.1f,%.1f ", px(a), py(b));
    return s + "'/>\n";
  }

  std::string no_data() const {
    return fmt("<text x='%.1f' y='%.1f' text-anchor='middle' class='note'>no data</text>\n", left + width / 2,
               top + height / 2);
  }
};

// More points than pixels only makes a heavy file: keep each pixel column's min and max, in order.
Points thin_out(const Points& pts, int columns) {
  if (static_cast<int>(pts.size()) <= 2 * columns) return pts;
  Points out;
  const size_t per = (pts.size() + columns - 1) / columns;
  for (size_t i = 0; i < pts.size(); i += per) {
    auto end = pts.begin() + static_cast<std::ptrdiff_t>(std::min(pts.size(), i + per));
    auto [mn, mx] = std::minmax_element(pts.begin() + static_cast<std::ptrdiff_t>(i), end,
                                        [](auto& a, auto& b) { return a.second < b.second; });
    if (mn > mx) std::swap(mn, mx);
    out.push_back(*mn);
    if (mx != mn) out.push_back(*mx);
  }
  return out;
}

std::string loss_panel(const std::vector<double>& losses, double left) {
  Points raw;  // NaN/inf steps are left out of the line (and of the axis range)
  for (size_t i = 0; i < losses.size(); ++i)
    if (std::isfinite(losses[i])) raw.emplace_back(static_cast<double>(i + 1), losses[i]);
  Panel p{left, 50, 310, 290, nice_axis(0, std::max<double>(1, static_cast<double>(losses.size()))), {}};
  if (raw.empty()) {
    p.y = nice_axis(0, 1);
    return p.frame("Training loss per step", "step", "loss") + p.no_data();
  }
  double lo = raw[0].second, hi = lo;
  for (auto& q : raw) {
    lo = std::min(lo, q.second);
    hi = std::max(hi, q.second);
  }
  p.y = nice_axis(std::min(0.0, lo), hi);

  // Trailing mean over ~2% of the run smooths step noise without lagging far behind.
  const size_t k = std::max<size_t>(1, raw.size() / 50);
  Points avg;
  double sum = 0;
  for (size_t i = 0; i < raw.size(); ++i) {
    sum += raw[i].second;
    if (i >= k) sum -= raw[i - k].second;
    avg.emplace_back(raw[i].first, sum / static_cast<double>(std::min(i + 1, k)));
  }
  std::string s = p.frame("Training loss per step", "step", "loss");
  if (k == 1) return s + p.polyline(raw, "avg");  // too few steps to smooth: one line, no legend
  s += p.polyline(thin_out(raw, 310), "raw") + p.polyline(avg, "avg");
  // Legend, top right inside the plot.
  const double lx = p.left + p.width - 150, ly = p.top + 16;
  s += fmt("<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='raw'/><text x='%.1f' y='%.1f'>per step</text>\n", lx,
           ly, lx + 20, ly, lx + 26, ly + 4);
  s += fmt(
      "<line x1='%.1f' y1='%.1f' x2='%.1f' y2='%.1f' class='avg'/><text x='%.1f' y='%.1f'>mean of %zu steps</text>\n",
      lx, ly + 16, lx + 20, ly + 16, lx + 26, ly + 20, k);
  return s;
}

std::string accuracy_panel(const std::vector<CurvePoint>& epochs, double left) {
  Points pts;
  for (const CurvePoint& e : epochs)
    if (std::isfinite(e.test_accuracy)) pts.emplace_back(e.epoch, 100.0 * e.test_accuracy);
  Panel p{left, 50, 310, 290, {}, {}};
  if (pts.empty()) {
    p.x = nice_axis(0, 1);
    p.y = nice_axis(0, 100);
    return p.frame("Test accuracy per epoch", "epoch", "accuracy (%)") + p.no_data();
  }
  double xlo = pts[0].first, xhi = xlo, ylo = pts[0].second, yhi = ylo;
  for (auto& q : pts) {
    xlo = std::min(xlo, q.first);
    xhi = std::max(xhi, q.first);
    ylo = std::min(ylo, q.second);
    yhi = std::max(yhi, q.second);
  }
  // Epochs are whole numbers: integer ticks, half an epoch of margin on each side.
  p.x = {xlo - 0.5, xhi + 0.5, std::max(1.0, nice_step(xhi - xlo + 1, 6))};
  const double pad = std::max(1.0, (yhi - ylo) * 0.15);
  p.y = nice_axis(std::max(0.0, ylo - pad), std::min(100.0, yhi + pad));

  std::string s = p.frame("Test accuracy per epoch", "epoch", "accuracy (%)");
  s += p.polyline(pts, "acc");
  for (size_t i = 0; i < pts.size(); ++i) {
    s += fmt("<circle cx='%.1f' cy='%.1f' r='3.5' class='acc-pt'/>\n", p.px(pts[i].first), p.py(pts[i].second));
    if (pts.size() <= 12 || i + 1 == pts.size())  // label every point while they fit, else the last
      s += fmt("<text x='%.1f' y='%.1f' text-anchor='middle' class='note'>%.1f</text>\n", p.px(pts[i].first),
               p.py(pts[i].second) - 9, pts[i].second);
  }
  return s;
}

void write_text(const std::string& path, const std::string& text) {
  io::write_atomic(path, [&](io::AtomicWriter& w) { w.write(text); });
}

}  // namespace

std::string curves_svg(const std::vector<double>& step_losses, const std::vector<CurvePoint>& epochs) {
  std::string s =
      "<svg xmlns='http://www.w3.org/2000/svg' width='800' height='400' viewBox='0 0 800 400' "
      "font-family='sans-serif' font-size='11' fill='#333'>\n"
      "<style>.grid{stroke:#e6e6e6}.axis{stroke:#888}.title{font-size:14px;font-weight:bold}"
      ".note{fill:#666}.raw{fill:none;stroke:#9ecae1;stroke-width:0.8}"
      ".avg{fill:none;stroke:#1f5fa8;stroke-width:2}.acc{fill:none;stroke:#c0392b;stroke-width:1.5}"
      ".acc-pt{fill:#c0392b}</style>\n"
      "<rect width='800' height='400' fill='white'/>\n";
  s += loss_panel(step_losses, 70);
  s += accuracy_panel(epochs, 470);
  return s + "</svg>\n";
}

void write_curves(const std::string& prefix, const std::vector<double>& step_losses,
                  const std::vector<CurvePoint>& epochs) {
  auto parent = std::filesystem::path(prefix).parent_path();
  std::error_code ec;
  if (!parent.empty()) std::filesystem::create_directories(parent, ec);
  if (ec) throw Error("cannot create directory " + parent.string() + " for curves " + prefix + ": " + ec.message());

  std::string csv = "epoch,train_loss,test_loss,test_accuracy\n";
  for (const CurvePoint& e : epochs)
    csv += fmt("%d,%.8g,%.8g,%.8g\n", e.epoch, e.train_loss, e.test_loss, e.test_accuracy);
  std::string steps = "step,loss\n";
  for (size_t i = 0; i < step_losses.size(); ++i) steps += fmt("%zu,%.8g\n", i + 1, step_losses[i]);

  write_text(prefix + ".csv", csv);
  write_text(prefix + "-steps.csv", steps);
  write_text(prefix + ".svg", curves_svg(step_losses, epochs));
}

}  // namespace meganeura
