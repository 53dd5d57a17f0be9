package planner

import (
	"fmt"
	"testing"
)

func TestScratchSanity(t *testing.T) {
	for _, pt := range []publishedPoint{
		{ID: "70b-tp4-h100-burst", Model: "meta-llama/Llama-3.1-70B-Instruct", GPU: "H100", GPUs: 4, Engine: "vllm", Version: "0.6.0", InputTokens: 220, OutputTokens: 200, Concurrency: 500, Requests: 500, Endpoint: "completions"},
		{ID: "70b-tp8-h100-c1", Model: "meta-llama/Llama-3.3-70B-Instruct", GPU: "H100", GPUs: 8, Engine: "vllm", Version: "0.11.0", InputTokens: 1000, OutputTokens: 200, Concurrency: 1, Requests: 20, Endpoint: "completions"},
		{ID: "mixtral-tp2-a100", Model: "mistralai/Mixtral-8x7B-Instruct-v0.1", GPU: "A100-80GB", GPUs: 2, Engine: "vllm", Version: "0.8.5", InputTokens: 1000, OutputTokens: 200, Concurrency: 64, Requests: 256, Endpoint: "completions"},
		{ID: "qwen30a3b-h100", Model: "Qwen/Qwen3-30B-A3B", GPU: "H100", GPUs: 1, Engine: "vllm", Version: "0.11.0", InputTokens: 1000, OutputTokens: 1000, Concurrency: 32, Requests: 128, Endpoint: "chat"},
		{ID: "8b-rate-h100", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H100", GPUs: 1, Engine: "vllm", Version: "0.10.0", InputTokens: 1024, OutputTokens: 128, RequestRate: 20, Arrival: "poisson", Requests: 1000, Endpoint: "completions"},
		{ID: "8b-h200-burst", Model: "meta-llama/Llama-3.1-8B-Instruct", GPU: "H200", GPUs: 1, Engine: "vllm", Version: "0.11.0", InputTokens: 1024, OutputTokens: 1024, Concurrency: 1000, Requests: 1000, Endpoint: "completions"},
		{ID: "gemma27b-a100", Model: "google/gemma-3-27b-it", GPU: "A100-80GB", GPUs: 1, Engine: "vllm", Version: "0.9.0", InputTokens: 2000, OutputTokens: 500, Concurrency: 16, Requests: 64, Endpoint: "chat"},
	} {
		pred, err := planPublished(pt)
		fmt.Println(pt.ID, err)
		if err == nil {
			fmt.Printf("   thr %.1f tpot %.2f ttft p50 %.1f pre %v\n", pred["output_token_throughput"], pred["tpot_p50_ms"], pred["ttft_p50_ms"], pred["preemptions"])
		}
	}
}
