package gemini

import "github.com/agentctl/agentctl/meta"

// defaultPrices are Google's paid-tier Gemini Developer API prices in USD per
// million tokens (input, cached input, output), for prompts up to 200K tokens, by
// model-id prefix (the longest matching key wins: discover.Prices). Source: Google's
// published Gemini API pricing as reported in March 2026 (2.5 Pro 1.25/10, cache
// 0.125; 2.5 Flash 0.30/2.50; 2.5 Flash-Lite 0.10/0.40; 3 Pro Preview 2/12),
// with cached input at a tenth of input; table dated 2026-12-02. Thinking tokens
// are billed as output, which is where the adapter counts them. Not modelled: the
// higher rate above 200K prompt tokens and context-cache storage per hour. Models
// Gemini CLI routes to that are not here (gemini-3.x flash ids) stay unpriced
// until added here or in config.json `prices`.
var defaultPrices = map[string]meta.Price{
	"gemini-2.5-pro":        {Input: 1.25, CacheRead: 0.125, Output: 10},
	"gemini-2.5-flash":      {Input: 0.30, CacheRead: 0.03, Output: 2.50},
	"gemini-2.5-flash-lite": {Input: 0.10, CacheRead: 0.01, Output: 0.40},
	"gemini-3-pro-preview":  {Input: 2, CacheRead: 0.20, Output: 12},
}
