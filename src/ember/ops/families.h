// One registration function per op family; each lives in ops/<family>.cc.
#pragma once

namespace ember {
class OpRegistry;

void register_math_ops(OpRegistry& r);       // element-wise unary and binary, AddN, Cast
void register_reduction_ops(OpRegistry& r);  // Sum, Mean, Max, Min, Prod, Any, All, ArgMax, ArgMin, ...
void register_linalg_ops(OpRegistry& r);     // MatMul (BatchMatMul semantics)
void register_array_ops(OpRegistry& r);      // shape and indexing ops
void register_nn_ops(OpRegistry& r);         // softmax, losses, bias_add, ...
void register_stitch_partition_ops(OpRegistry& r);  // DynamicStitch, DynamicPartition
void register_activation_grad_ops(OpRegistry& r);   // ReluGrad, SigmoidGrad, ...; LeakyRelu, Selu, Softsign
void register_conv_ops(OpRegistry& r);          // Conv2D, Conv3D, DepthwiseConv2dNative and their backprops
void register_pool_ops(OpRegistry& r);          // MaxPool, AvgPool (2-D, 3-D) and their gradients
void register_norm_ops(OpRegistry& r);          // FusedBatchNormV3, LRN and their gradients
void register_rnn_ops(OpRegistry& r);           // BlockLSTMV2 and its gradient
void register_image_ops(OpRegistry& r);         // ResizeBilinear, ResizeNearestNeighbor and their gradients
void register_random_ops(OpRegistry& r);        // stateful and stateless random
void register_graph_ops(OpRegistry& r);         // Placeholder, Const, PartitionedCall
void register_control_flow_ops(OpRegistry& r);  // If, While, Case and their stateless forms
void register_state_ops(OpRegistry& r);         // ReadVariableOp, AssignVariableOp, AssignAdd/SubVariableOp
void register_lookup_ops(OpRegistry& r);        // tf.lookup's table ops (ops/lookup.cc)
void register_print_ops(OpRegistry& r);         // PrintV2
void register_fused_ops(OpRegistry& r);         // FusedElementwise, FusedReduction (made by the optimizer)
void register_dataset_ops(OpRegistry& r);       // DatasetIteratorCreate/Next/Delete (ops/dataset.h)
void register_summary_ops(OpRegistry& r);       // ContextWriteSummary, ContextFlushSummary
void register_send_recv_ops(OpRegistry& r);     // _Send, _Recv (ops/send_recv.h)
void register_complex_ops(OpRegistry& r);       // Complex, Real, Imag, Conj, ComplexAbs, Angle
void register_fft_ops(OpRegistry& r);           // FFT, IFFT, RFFT, IRFFT (1-3 D)
void register_string_ops(OpRegistry& r);        // tf.strings (ops/strings.cc)
void register_string_array_kernels(OpRegistry& r);  // string kernels of Equal, ConcatV2, ... (after them)
void register_parse_example_ops(OpRegistry& r);     // ParseExampleV2 (ops/parse_example.cc)
void register_file_io_ops(OpRegistry& r);           // ReadFile, WriteFile (ops/file_io.cc)
void register_set_ops(OpRegistry& r);               // SetSize, *SetOperation (ops/sets.cc)
void register_csv_ops(OpRegistry& r);               // DecodeCSV (ops/decode_csv.cc)
void register_audio_ops(OpRegistry& r);             // DecodeWav, EncodeWav (ops/audio.cc)
void register_image_codec_ops(
    OpRegistry& r);  // DecodeJpeg, EncodePng, DecodeImage, ... (ops/image_codecs.cc)

inline void register_all_ops(OpRegistry& r) {
  register_math_ops(r);
  register_complex_ops(r);
  register_fft_ops(r);
  register_reduction_ops(r);
  register_linalg_ops(r);
  register_array_ops(r);
  register_nn_ops(r);
  register_activation_grad_ops(r);
  register_stitch_partition_ops(r);
  register_conv_ops(r);
  register_pool_ops(r);
  register_norm_ops(r);
  register_rnn_ops(r);
  register_image_ops(r);
  register_random_ops(r);
  register_graph_ops(r);
  register_control_flow_ops(r);
  register_state_ops(r);
  register_lookup_ops(r);
  register_print_ops(r);
  register_summary_ops(r);
  register_fused_ops(r);
  register_dataset_ops(r);
  register_send_recv_ops(r);
  register_string_ops(r);
  register_string_array_kernels(r);
  register_parse_example_ops(r);
  register_file_io_ops(r);
  register_set_ops(r);
  register_csv_ops(r);
  register_audio_ops(r);
  register_image_codec_ops(r);
}

}  // namespace ember
