// A Go order system for the delivery orchestrator. Its order workflow (order.go, run by this
// program's own worker) starts a delivery as a child workflow by name with JSON input, as any
// Temporal SDK can (docs/any-language.md, docs/workflow-contract.json), and is told of every change
// by the delivery's `deliveryChanged` signals: it never asks (no `status` query, no describe). The
// first order's delivery has a maximum price its quote exceeds: told that the quote waits, the order
// workflow approves it and follows the delivery to its end. The second order cancels its delivery
// once told the provider created it, and is told the cancellation's outcome and the end.
//
//	TEMPORAL_ADDRESS=127.0.0.1:7233 DELIVERY_PAYLOAD_KEYS="$(cat ../../.data/payload-keys)" DELIVERY_END_GRACE_MS=0 go run .
//
// Progress goes to stderr; the last line on stdout is a JSON summary of both orders.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path"
	"strconv"
	"sync"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
	"google.golang.org/grpc"
)

func env(name, fallback string) string {
	if v := os.Getenv(name); v != "" {
		return v
	}
	return fallback
}

func logf(format string, args ...any) { fmt.Fprintf(os.Stderr, format+"\n", args...) }

func utc(t time.Time) string { return t.UTC().Truncate(time.Second).Format("2006-01-02T15:04:05Z") }

func order(destinations int, food bool) Order {
	now := time.Now()
	o := Order{
		DesiredPickupTime: utc(now.Add(time.Hour)),
		PickupLocation:    Location{LastName: "Kitchen", Company: "Go Trattoria", Address: "Torstraße 1, 10119 Berlin"},
		IsFood:            food,
	}
	for i := 0; i < destinations; i++ {
		o.Destinations = append(o.Destinations, Destination{
			Location:        Location{LastName: fmt.Sprintf("Recipient%d", i), Company: "", Address: fmt.Sprintf("Musterstraße %d, 10115 Berlin", i+1), Phone: fmt.Sprintf("+49151123456%02d", i)},
			PackageType:     "MEDIUM",
			TimeWindowStart: utc(now.Add(2 * time.Hour)),
			TimeWindowEnd:   utc(now.Add(3 * time.Hour)),
		})
	}
	return o
}

// callCounter counts this process's calls to Temporal by method (QueryWorkflow, …): the summary
// shows that following deliveries by notification asks nothing.
type callCounter struct {
	mu    sync.Mutex
	calls map[string]int
}

func (c *callCounter) intercept(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
	c.mu.Lock()
	c.calls[path.Base(method)]++
	c.mu.Unlock()
	return invoker(ctx, method, req, reply, cc, opts...)
}

func (c *callCounter) snapshot() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]int, len(c.calls))
	for k, v := range c.calls {
		out[k] = v
	}
	return out
}

// endGrace reads DELIVERY_END_GRACE_MS: how long a delivery stays open after its end for late
// statuses (its last notification comes after). Unset: the delivery workflow's default, 10 minutes.
func endGrace() (*FollowUp, time.Duration, error) {
	value := os.Getenv("DELIVERY_END_GRACE_MS")
	if value == "" {
		return nil, 10 * time.Minute, nil
	}
	ms, err := strconv.ParseInt(value, 10, 64)
	if err != nil || ms < 0 {
		return nil, 0, fmt.Errorf("DELIVERY_END_GRACE_MS: must be a whole number of milliseconds, 0 or more (got %q)", value)
	}
	return &FollowUp{EndGraceMs: ms}, time.Duration(ms) * time.Millisecond, nil
}

func run() error {
	followUp, grace, err := endGrace()
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute+grace)
	defer cancel()
	deliveriesTaskQueue := env("DELIVERY_TASK_QUEUE", "deliveries")
	ordersTaskQueue := env("ORDER_TASK_QUEUE", "go-orders")
	prefix := env("ORDER_REFERENCE_PREFIX", fmt.Sprintf("GO-%d", time.Now().Unix()))

	calls := &callCounter{calls: map[string]int{}}
	options := client.Options{
		HostPort:          env("TEMPORAL_ADDRESS", "127.0.0.1:7233"),
		Namespace:         env("TEMPORAL_NAMESPACE", "default"),
		Logger:            sdklog.NewStructuredLogger(slog.New(slog.NewTextHandler(os.Stderr, nil))),
		ConnectionOptions: client.ConnectionOptions{DialOptions: []grpc.DialOption{grpc.WithChainUnaryInterceptor(calls.intercept)}},
	}
	// The same codec for everything this process sends and receives: the deliveries' input,
	// the notifications (signals), the update's answer, the order workflows' own history.
	if value := os.Getenv("DELIVERY_PAYLOAD_KEYS"); value != "" {
		keys, err := KeysFromEnv(value)
		if err != nil {
			return err
		}
		codec, err := NewAESGCMCodec(keys, nil)
		if err != nil {
			return err
		}
		options.DataConverter = converter.NewCodecDataConverter(converter.GetDefaultDataConverter(), codec)
	}
	c, err := client.Dial(options)
	if err != nil {
		return fmt.Errorf("connecting to Temporal at %s: %w", options.HostPort, err)
	}
	defer c.Close()

	w := worker.New(c, ordersTaskQueue, worker.Options{})
	w.RegisterWorkflowWithOptions(OrderWorkflow, workflow.RegisterOptions{Name: OrderWorkflowType})
	w.RegisterActivity(&OrderActivities{Client: c})
	if err := w.Start(); err != nil {
		return fmt.Errorf("starting the order worker on %s: %w", ordersTaskQueue, err)
	}
	defer w.Stop()

	orders := map[string]OrderInput{
		// A food delivery with a maximum price the quote will exceed: the delivery waits for approval.
		"approvedAndDelivered": {Delivery: DeliveryInput{Reference: prefix + "-1", Order: order(2, true), MaxPrice: &Price{Amount: 1, Currency: "EUR"}, FollowUp: followUp}, ApproveOverMax: true},
		// A delivery cancelled once the provider has created it.
		"cancelled": {Delivery: DeliveryInput{Reference: prefix + "-2", Order: order(1, false), FollowUp: followUp}, CancelOnceCreated: true},
	}
	// Both orders at once; each order workflow follows its own delivery.
	runs := map[string]client.WorkflowRun{}
	for name, in := range orders {
		in.DeliveriesTaskQueue = deliveriesTaskQueue
		r, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
			ID:                    "order:" + in.Delivery.Reference,
			TaskQueue:             ordersTaskQueue,
			WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		}, OrderWorkflowType, in)
		if err != nil {
			return fmt.Errorf("starting order %s: %w", in.Delivery.Reference, err)
		}
		logf("started %s (run %s)", r.GetID(), r.GetRunID())
		runs[name] = r
	}
	summaries := map[string]any{}
	for name, r := range runs {
		var s OrderSummary
		if err := r.Get(ctx, &s); err != nil {
			return fmt.Errorf("%s: %w", r.GetID(), err)
		}
		logf("%s: %s ended %s (%s), %d notifications", r.GetID(), s.WorkflowID, s.Status, s.Outcome, s.Notifications)
		summaries[name] = s
	}
	summaries["temporalCalls"] = calls.snapshot()
	out, _ := json.Marshal(summaries)
	fmt.Println(string(out))
	return nil
}

func main() {
	if err := run(); err != nil {
		logf("go-order-system: %v", err)
		os.Exit(1)
	}
}
