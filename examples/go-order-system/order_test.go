package main

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"
)

// The order workflow in Temporal's Go test environment: a stand-in delivery child, the
// notifications sent as the real delivery would (test/temporal/go-order-system.test.ts runs the
// real one). What matters here is what a real run rarely shows: a signal sent twice, a gap.

// standInDelivery ends an hour after it starts, or, cancelled, 10 s after (it tells its end first).
func standInDelivery(ctx workflow.Context, _ DeliveryInput) (DeliveryState, error) {
	if err := workflow.Sleep(ctx, time.Hour); err != nil {
		after, _ := workflow.NewDisconnectedContext(ctx)
		_ = workflow.Sleep(after, 10*time.Second)
		return DeliveryState{}, err
	}
	return DeliveryState{Phase: "ended", Status: "DELIVERED"}, nil
}

func newEnv(t *testing.T, delivery any) *testsuite.TestWorkflowEnvironment {
	var suite testsuite.WorkflowTestSuite
	env := suite.NewTestWorkflowEnvironment()
	env.RegisterWorkflowWithOptions(OrderWorkflow, workflow.RegisterOptions{Name: OrderWorkflowType})
	env.RegisterWorkflowWithOptions(delivery, workflow.RegisterOptions{Name: DeliveryWorkflowType})
	return env
}

// tell sends the notifications at 1 s, 2 s, … after the start, in the order given.
func tell(env *testsuite.TestWorkflowEnvironment, ns ...DeliveryNotification) {
	for i, n := range ns {
		env.RegisterDelayedCallback(func() { env.SignalWorkflow(NotifySignal, n) }, time.Duration(i+1)*time.Second)
	}
}

func note(sequence int64, typ string, change NotificationChange) DeliveryNotification {
	return DeliveryNotification{Type: typ, EventID: fmt.Sprintf("e%d", sequence), Sequence: sequence, Reference: "T-1", Change: change}
}

func ended(sequence int64, outcome, status string, links int) DeliveryNotification {
	n := note(sequence, "delivery.ended", NotificationChange{Subject: "delivery", Status: status, Outcome: outcome})
	final := DeliveryState{Phase: "ended", Status: status, DeliveryID: "d-1"}
	for i := 0; i < links; i++ {
		final.Destinations = append(final.Destinations, DestinationState{ID: "s", Status: status, TrackingURL: "https://track.example/s"})
	}
	n.Result = &final
	return n
}

func runOrder(t *testing.T, env *testsuite.TestWorkflowEnvironment, in OrderInput) OrderSummary {
	t.Helper()
	env.ExecuteWorkflow(OrderWorkflowType, in)
	if !env.IsWorkflowCompleted() {
		t.Fatal("the order workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("the order workflow failed: %v", err)
	}
	var s OrderSummary
	if err := env.GetWorkflowResult(&s); err != nil {
		t.Fatal(err)
	}
	return s
}

func input() OrderInput {
	return OrderInput{Delivery: DeliveryInput{Reference: "T-1", Order: Order{IsFood: true}}, DeliveriesTaskQueue: "deliveries"}
}

func TestOrderCountsEachSequenceOnceAndSeesAGap(t *testing.T) {
	env := newEnv(t, standInDelivery)
	tell(env,
		note(1, "delivery.status_changed", NotificationChange{Subject: "delivery", Status: "CREATED"}),
		note(2, "destination.tracking_link", NotificationChange{Subject: "s", TrackingURL: "https://track.example/s"}),
		note(2, "destination.tracking_link", NotificationChange{Subject: "s", TrackingURL: "https://track.example/s"}), // sent again
		note(1, "delivery.status_changed", NotificationChange{Subject: "delivery", Status: "CREATED"}),                 // sent again, late
		ended(4, "completed", "DELIVERED", 1), // 3 never came
	)
	s := runOrder(t, env, input())
	if s.Notifications != 3 || s.Duplicates != 2 || s.InSequence {
		t.Errorf("notifications %d, duplicates %d, in sequence %v: want 3, 2, false", s.Notifications, s.Duplicates, s.InSequence)
	}
	if s.Outcome != "completed" || s.Status != "DELIVERED" || s.TrackingLinks != 1 || s.DeliveryID != "d-1" || s.CancelledWorkflow {
		t.Errorf("summary %+v", s)
	}
	if strings.Join(s.Types, ",") != "delivery.status_changed,destination.tracking_link,delivery.ended" {
		t.Errorf("types %v", s.Types)
	}
}

func TestOrderApprovesAQuoteItIsToldWaits(t *testing.T) {
	env := newEnv(t, standInDelivery)
	var approved []string
	env.RegisterActivityWithOptions(func(_ context.Context, workflowID string) (string, error) {
		approved = append(approved, workflowID)
		return "creating", nil
	}, activity.RegisterOptions{Name: "ApproveQuote"})
	tell(env,
		note(1, "quote.awaiting_approval", NotificationChange{Subject: "quote", Quote: &Quote{Price: Price{Amount: 1234, Currency: "EUR"}}}),
		ended(2, "completed", "DELIVERED", 2),
	)
	in := input()
	in.ApproveOverMax = true
	s := runOrder(t, env, in)
	if len(approved) != 1 || approved[0] != "delivery:T-1" {
		t.Errorf("approved %v, want once for delivery:T-1", approved)
	}
	if !s.Approved || s.QuotedAmount != 1234 || s.TrackingLinks != 2 || !s.InSequence || s.Notifications != 2 {
		t.Errorf("summary %+v", s)
	}
}

func TestOrderCancelsItsDeliveryOnceToldItWasCreated(t *testing.T) {
	env := newEnv(t, standInDelivery)
	tell(env,
		note(1, "delivery.status_changed", NotificationChange{Subject: "delivery", Status: "CREATED"}),
		note(2, "cancellation.outcome", NotificationChange{Subject: "cancellation", Cancellation: &CancellationOutcome{Outcome: "cancelled"}}),
		note(3, "delivery.status_changed", NotificationChange{Subject: "delivery", Status: "CANCELED"}),
		ended(4, "cancelled", "CANCELED", 0),
	)
	in := input()
	in.CancelOnceCreated = true
	s := runOrder(t, env, in)
	if !s.CancelledWorkflow || s.Cancellation != "cancelled" || s.Outcome != "cancelled" || s.Status != "CANCELED" {
		t.Errorf("summary %+v", s)
	}
	if strings.Join(s.DeliveryStatuses, ",") != "CREATED,CANCELED" {
		t.Errorf("delivery statuses %v", s.DeliveryStatuses)
	}
}

func TestOrderFailsWhenItsDeliveryEndsWithoutAWord(t *testing.T) {
	env := newEnv(t, func(workflow.Context, DeliveryInput) (DeliveryState, error) {
		return DeliveryState{}, temporal.NewNonRetryableApplicationError("order.destinations: at least 1", "InvalidDeliveryInput", nil)
	})
	env.ExecuteWorkflow(OrderWorkflowType, input())
	err := env.GetWorkflowError()
	if err == nil || !strings.Contains(err.Error(), "InvalidDeliveryInput") {
		t.Errorf("error %v, want the delivery's InvalidDeliveryInput", err)
	}
}
