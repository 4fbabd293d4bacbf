package wire

import "strings"

// Priority names, most important first; a priority's index is its rank
// (P0 = 0). They are the LabelPriority values and the key table's
// priorities.
const (
	PriorityP0 = "P0" // critical (trade, settle)
	PriorityP1 = "P1" // logged-in users
	PriorityP2 = "P2" // anonymous and background

	NumPriorities = 3
)

// Priorities returns the priority names, most important first.
func Priorities() [NumPriorities]string {
	return [NumPriorities]string{PriorityP0, PriorityP1, PriorityP2}
}

// PriorityIndex returns the rank of the priority named s (exact spelling)
// and whether there is one.
func PriorityIndex(s string) (int, bool) {
	names := Priorities()
	return indexOf(names[:], s)
}

// Overload level names, in increasing severity; a level's index is its
// MetricOverloadLevel value.
const (
	LevelGreen  = "green"  // admits everything
	LevelYellow = "yellow" // sheds P2
	LevelRed    = "red"    // admits only P0
	LevelBlack  = "black"  // admits nothing: fallbacks

	NumLevels = 4
)

// Levels returns the level names in increasing severity.
func Levels() [NumLevels]string {
	return [NumLevels]string{LevelGreen, LevelYellow, LevelRed, LevelBlack}
}

// LevelIndex returns the MetricOverloadLevel value of the level named s
// (any case) and whether there is one.
func LevelIndex(s string) (int, bool) {
	names := Levels()
	return indexOf(names[:], strings.ToLower(s))
}

// LevelName returns the name of level value v, or "" when v is no level.
func LevelName(v int) string {
	if v < 0 || v >= NumLevels {
		return ""
	}
	return Levels()[v]
}

// Gateway route names: the LabelRoute values, the keys of the gateway's
// routes config and the routes of rate-limit rules.
const (
	RouteChat     = "chat"     // PathChat
	RoutePredict  = "predict"  // PathPredict
	RouteAgent    = "agent"    // PathAgent
	RouteExport   = "export"   // PathExport
	RouteStandard = "standard" // PathStandard
	// RouteCompletions and RouteEmbeddings are the OpenAI routes the lab's
	// load does not send but real backends (vLLM, TGI, llama.cpp) serve.
	RouteCompletions = "completions" // PathCompletions
	RouteEmbeddings  = "embeddings"  // PathEmbeddings
	RouteOther       = "other"       // PathModels and any other /v1/ path: counted, never limited

	NumRoutes = 8
)

// Routes returns the gateway's route names, RouteOther last.
func Routes() [NumRoutes]string {
	return [NumRoutes]string{RouteChat, RoutePredict, RouteAgent, RouteExport, RouteStandard, RouteCompletions, RouteEmbeddings, RouteOther}
}

// RouteChatStream and RouteCompletionsStream are the load generator's
// names for a chat and a text completion request with "stream":true (read
// as SSE to its end); the gateway counts them as RouteChat and
// RouteCompletions.
const (
	RouteChatStream        = "chat-stream"
	RouteCompletionsStream = "completions-stream"
)

// NumLoadRoutes is the number of routes the load generator can send.
const NumLoadRoutes = 9

// LoadRoutes returns the routes a traffic mix may name.
func LoadRoutes() [NumLoadRoutes]string {
	return [NumLoadRoutes]string{RoutePredict, RouteChat, RouteChatStream, RouteAgent, RouteExport, RouteStandard, RouteCompletions, RouteCompletionsStream, RouteEmbeddings}
}

// LoadRouteGateway is the gateway route (LabelRoute) a load generator
// route is counted under: a stream route's unstreamed route, any other
// itself.
func LoadRouteGateway(r string) string {
	switch r {
	case RouteChatStream:
		return RouteChat
	case RouteCompletionsStream:
		return RouteCompletions
	}
	return r
}

// Route class names: the LabelClass values and the keys of the gateway's
// classes config (one bulkhead each).
const (
	ClassAI       = "ai"       // chat, predict, completions and embeddings
	ClassAgent    = "agent"    // agent
	ClassStream   = "stream"   // export
	ClassStandard = "standard" // standard and other

	NumClasses = 4
)

// Classes returns the route class names.
func Classes() [NumClasses]string {
	return [NumClasses]string{ClassAI, ClassAgent, ClassStream, ClassStandard}
}

// Rate-limit store kinds: the gateway's ratelimit.store.kind values and the
// LabelStore values of MetricRateLimitStoreFallback.
const (
	StoreLocal = "local"
	StoreRedis = "redis"
)

func indexOf(names []string, s string) (int, bool) {
	for i, n := range names {
		if n == s {
			return i, true
		}
	}
	return 0, false
}
