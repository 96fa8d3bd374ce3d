// Found by tests/shardy_survey.py (seed 11) after the stage-0 single-use fix; line-minimised only.
// Not yet explained: the reshapes take their sharding from a different source than in Shardy.
mesh @mesh = <["a0"=2, "a1"=2, "a2"=2]>

func @main(%x: tensor<2x8xf32, <@mesh, [{?}p2, {"a2"}p1]>>, %y: tensor<2x8xf32, <@mesh, [{"a1", ?}p0, {"a0", ?}]>>) -> tensor<2x8xf32, <@mesh, [{"a2"}, {"a0", "a1", ?}]>> {
  %0 = reshape %y : tensor<16xf32>
  %1 = reshape %0 : tensor<2x8xf32>
  %2 = logistic %1 : tensor<2x8xf32>
  %3 = constant {value = dense<0.0>} : tensor<f32>
  %4 = reduce %1, %3 {dimensions = [0], kind = add} : tensor<8xf32>
  %5 = add %x, %y : tensor<2x8xf32>
  %6 = constant {value = dense<0.0>} : tensor<f32>
  %7 = reduce %2, %6 {dimensions = [1], kind = add} : tensor<2xf32>
  return %2
}
