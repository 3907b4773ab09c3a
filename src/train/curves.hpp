// Training curves as files a person can open: CSV for tools, SVG for eyes.
#pragma once
#include <string>
#include <vector>

namespace meganeura {

struct CurvePoint {
  int epoch;
  double train_loss, test_loss, test_accuracy;  // accuracy as a fraction in [0, 1]
};

// Writes <prefix>.csv (epoch,train_loss,test_loss,test_accuracy), <prefix>-steps.csv (step,loss;
// steps count from 1) and <prefix>.svg (training loss per step with a moving average, test
// accuracy per epoch). Creates the parent directory; each file is written atomically.
void write_curves(const std::string& prefix, const std::vector<double>& step_losses,
                  const std::vector<CurvePoint>& epochs);

// The SVG alone (800x400, self-contained), for callers that want it as a string.
std::string curves_svg(const std::vector<double>& step_losses, const std::vector<CurvePoint>& epochs);

}  // namespace meganeura
