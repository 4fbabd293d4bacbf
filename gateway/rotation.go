package gateway

import "github.com/levee-lab/levee/gateway/admit"

// onRotation is the upstream pool's rotation hook (upstream.WithRotationHook):
// the model classes' limiters follow the number of nodes in rotation
// (admit.Resizer), so that a node's loss lowers the limit before the
// survivors' queue shows it, and its return raises it before a probe finds
// the room. Every node out (0) is not a size to scale by: the change after
// it is scaled from the last count that was one.
func (g *Gateway) onRotation(from, to int) {
	if to < 1 {
		return
	}
	if from < 1 {
		from = int(g.lastRotation.Load())
	}
	g.lastRotation.Store(int64(to))
	if from == to {
		return
	}
	resized := 0
	for _, c := range []classID{classAI, classAgent} {
		bh := g.bulkheads[c]
		if bh == nil {
			continue // during New
		}
		if rz, ok := bh.Limiter().(admit.Resizer); ok {
			rz.Resize(from, to)
			resized++
		}
	}
	if resized > 0 {
		// Static limits are not scaled: no line says they were.
		g.log.Info("limiter resized to the nodes in rotation", "from", from, "to", to, "limiters", resized)
	}
}
