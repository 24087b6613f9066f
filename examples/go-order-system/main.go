// A Go order system for the delivery orchestrator: it starts a delivery with a maximum price,
// approves the quote, follows the delivery with the `status` query until it ends, reads the
// result, and cancels a second delivery. The workflow is started by name with JSON input, as any
// Temporal SDK can (docs/any-language.md, docs/workflow-contract.json).
//
//	TEMPORAL_ADDRESS=127.0.0.1:7233 DELIVERY_PAYLOAD_KEYS="$(cat ../../.data/payload-keys)" go run .
//
// Progress goes to stderr; the last line on stdout is a JSON summary of both deliveries.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/temporal"
)

// The workflow's contract (docs/workflow-contract.json), the parts this order system uses.

type Price struct {
	Amount   int64  `json:"amount"`
	Currency string `json:"currency"`
}

type Location struct {
	LastName string `json:"last_name"`
	Company  string `json:"company"`
	Address  string `json:"address"`
	Phone    string `json:"phone,omitempty"`
}

type Destination struct {
	Location        Location `json:"location"`
	PackageType     string   `json:"package_type"`
	TimeWindowStart string   `json:"time_window_start"`
	TimeWindowEnd   string   `json:"time_window_end"`
}

type Order struct {
	DesiredPickupTime string        `json:"desired_pickup_time"`
	PickupLocation    Location      `json:"pickup_location"`
	Destinations      []Destination `json:"destinations"`
	IsFood            bool          `json:"is_food"`
}

type DeliveryInput struct {
	Reference string `json:"reference"`
	Order     Order  `json:"order"`
	MaxPrice  *Price `json:"maxPrice,omitempty"`
}

type TimelineEntry struct {
	At      string `json:"at"`
	Subject string `json:"subject"`
	Status  string `json:"status,omitempty"`
	Note    string `json:"note,omitempty"`
	Source  string `json:"source"`
}

type DestinationState struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	TrackingURL string `json:"trackingUrl"`
}

type DeliveryState struct {
	Reference    string             `json:"reference"`
	Phase        string             `json:"phase"`
	DeliveryID   string             `json:"deliveryId,omitempty"`
	Status       string             `json:"status,omitempty"`
	Destinations []DestinationState `json:"destinations"`
	Quote        *struct {
		Price Price `json:"price"`
	} `json:"quote,omitempty"`
	Price        *Price `json:"price,omitempty"`
	IsFood       bool   `json:"isFood"`
	Cancellation *struct {
		Outcome string `json:"outcome"`
		Reason  string `json:"reason,omitempty"`
	} `json:"cancellation,omitempty"`
	Timeline []TimelineEntry `json:"timeline"`
}

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

// start does what the TypeScript client does at start: the workflow ID from the reference, a
// reference used once, the Web UI's summary, food first, and the search attributes visible before
// the first workflow task (the workflow checks the input and sets them itself too).
func start(ctx context.Context, c client.Client, taskQueue string, in DeliveryInput) (client.WorkflowRun, error) {
	priority := 3
	if in.Order.IsFood {
		priority = 1
	}
	return c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{
		ID:                    "delivery:" + in.Reference,
		TaskQueue:             taskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		StaticSummary:         fmt.Sprintf("%d stops · ref %s (Go order system)", len(in.Order.Destinations), in.Reference),
		Priority:              temporal.Priority{PriorityKey: priority},
		TypedSearchAttributes: temporal.NewSearchAttributes(
			temporal.NewSearchAttributeKeyKeyword("OrderReference").ValueSet(in.Reference),
			temporal.NewSearchAttributeKeyBool("IsFood").ValueSet(in.Order.IsFood),
			temporal.NewSearchAttributeKeyInt64("DestinationCount").ValueSet(int64(len(in.Order.Destinations))),
		),
	}, "delivery", in)
}

func status(ctx context.Context, c client.Client, workflowID string) (DeliveryState, error) {
	var s DeliveryState
	v, err := c.QueryWorkflow(ctx, workflowID, "", "status")
	if err == nil {
		err = v.Get(&s)
	}
	return s, err
}

// waitFor polls the status query until done(state) or the context ends, printing new timeline entries.
func waitFor(ctx context.Context, c client.Client, workflowID string, seen *int, done func(DeliveryState) bool) (DeliveryState, error) {
	for {
		s, err := status(ctx, c, workflowID)
		if err != nil {
			return s, err
		}
		for ; *seen < len(s.Timeline); *seen++ {
			e := s.Timeline[*seen]
			logf("  %s %s %s %s%s", workflowID, e.Subject, e.Status, e.Note, map[bool]string{true: " (" + e.Source + ")", false: ""}[e.Source != ""])
		}
		if done(s) {
			return s, nil
		}
		select {
		case <-ctx.Done():
			return s, fmt.Errorf("%s: gave up waiting (phase %s): %w", workflowID, s.Phase, ctx.Err())
		case <-time.After(300 * time.Millisecond):
		}
	}
}

type summary struct {
	Reference         string `json:"reference"`
	WorkflowID        string `json:"workflowId"`
	Approved          bool   `json:"approved,omitempty"`
	QuotedAmount      int64  `json:"quotedAmount,omitempty"`
	Status            string `json:"status,omitempty"`
	DeliveryID        string `json:"deliveryId,omitempty"`
	Destinations      int    `json:"destinations,omitempty"`
	TrackingLinks     int    `json:"trackingLinks,omitempty"`
	Cancellation      string `json:"cancellation,omitempty"`
	CancelledWorkflow bool   `json:"cancelledWorkflow,omitempty"`
}

func run() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	taskQueue := env("DELIVERY_TASK_QUEUE", "deliveries")
	prefix := env("ORDER_REFERENCE_PREFIX", fmt.Sprintf("GO-%d", time.Now().Unix()))

	options := client.Options{HostPort: env("TEMPORAL_ADDRESS", "127.0.0.1:7233"), Namespace: env("TEMPORAL_NAMESPACE", "default")}
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

	// 1. A food delivery with a maximum price the quote will exceed: the workflow waits for approval.
	first := DeliveryInput{Reference: prefix + "-1", Order: order(2, true), MaxPrice: &Price{Amount: 1, Currency: "EUR"}}
	run1, err := start(ctx, c, taskQueue, first)
	if err != nil {
		return fmt.Errorf("starting %s: %w", first.Reference, err)
	}
	logf("started %s (run %s)", run1.GetID(), run1.GetRunID())
	seen := 0
	waiting, err := waitFor(ctx, c, run1.GetID(), &seen, func(s DeliveryState) bool { return s.Phase == "awaiting_approval" || s.Phase == "ended" })
	if err != nil {
		return err
	}
	if waiting.Phase != "awaiting_approval" || waiting.Quote == nil {
		return fmt.Errorf("%s: expected to wait for approval, phase is %s", run1.GetID(), waiting.Phase)
	}
	logf("quote %d %s is over the maximum: approving", waiting.Quote.Price.Amount, waiting.Quote.Price.Currency)
	update, err := c.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{WorkflowID: run1.GetID(), UpdateName: "approveQuote", WaitForStage: client.WorkflowUpdateStageCompleted})
	if err != nil {
		return fmt.Errorf("approveQuote: %w", err)
	}
	var approved DeliveryState
	if err := update.Get(ctx, &approved); err != nil {
		return fmt.Errorf("approveQuote: %w", err)
	}
	if _, err := waitFor(ctx, c, run1.GetID(), &seen, func(s DeliveryState) bool { return s.Phase == "ended" }); err != nil {
		return err
	}
	var result DeliveryState
	if err := run1.Get(ctx, &result); err != nil {
		return fmt.Errorf("%s result: %w", run1.GetID(), err)
	}
	links := 0
	for _, d := range result.Destinations {
		if d.TrackingURL != "" {
			links++
		}
	}
	logf("%s ended %s", run1.GetID(), result.Status)
	one := summary{Reference: first.Reference, WorkflowID: run1.GetID(), Approved: true, QuotedAmount: waiting.Quote.Price.Amount, Status: result.Status, DeliveryID: result.DeliveryID, Destinations: len(result.Destinations), TrackingLinks: links}

	// 2. A second delivery, cancelled once the provider has created it.
	second := DeliveryInput{Reference: prefix + "-2", Order: order(1, false)}
	run2, err := start(ctx, c, taskQueue, second)
	if err != nil {
		return fmt.Errorf("starting %s: %w", second.Reference, err)
	}
	logf("started %s", run2.GetID())
	seen2 := 0
	if _, err := waitFor(ctx, c, run2.GetID(), &seen2, func(s DeliveryState) bool { return s.Phase == "following" || s.Phase == "ended" }); err != nil {
		return err
	}
	if err := c.CancelWorkflow(ctx, run2.GetID(), ""); err != nil {
		return fmt.Errorf("cancelling %s: %w", run2.GetID(), err)
	}
	err = run2.Get(ctx, nil)
	var cancelled *temporal.CanceledError
	two := summary{Reference: second.Reference, WorkflowID: run2.GetID(), CancelledWorkflow: errors.As(err, &cancelled)}
	final, qerr := waitFor(ctx, c, run2.GetID(), &seen2, func(s DeliveryState) bool { return s.Phase == "ended" || s.Cancellation != nil })
	if qerr != nil {
		return qerr
	}
	if final.Cancellation != nil {
		two.Cancellation = final.Cancellation.Outcome
	}
	two.Status, two.DeliveryID = final.Status, final.DeliveryID
	logf("%s cancellation: %s, status %s", run2.GetID(), two.Cancellation, final.Status)

	out, _ := json.Marshal(map[string]summary{"approvedAndDelivered": one, "cancelled": two})
	fmt.Println(string(out))
	return nil
}

func main() {
	if err := run(); err != nil {
		logf("go-order-system: %v", err)
		os.Exit(1)
	}
}
