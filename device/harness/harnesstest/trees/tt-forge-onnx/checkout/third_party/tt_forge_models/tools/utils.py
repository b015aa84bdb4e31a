# benchfleet fixture: stand-in for tenstorrent/tt-forge-models tools/utils.py,
# only export_torch_model_to_onnx (FAKE: writes a placeholder file instead of
# running torch.onnx.export, returns a placeholder "ModelProto").
import os


def export_torch_model_to_onnx(model, path, inputs, model_name, opset_version=17):
    os.makedirs(path, exist_ok=True)
    onnx_path = os.path.join(path, f"{model_name}.onnx")
    with open(onnx_path, "w") as f:
        f.write(f"fake onnx model {model_name} opset {opset_version}\n")
    return {"path": onnx_path, "opset_version": opset_version}
