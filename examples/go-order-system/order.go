package main

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.temporal.io/api/enums/v1"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/temporal"
	"go.temporal.io/sdk/workflow"
)

// OrderWorkflowType is the order workflow's name, registered by this program's worker on its own task queue.
const OrderWorkflowType = "order"

// OrderInput is one order: the delivery to start and what the order system does when told of it.
type OrderInput struct {
	Delivery            DeliveryInput `json:"delivery"`
	DeliveriesTaskQueue string        `json:"deliveriesTaskQueue"`
	// ApproveOverMax approves a quote that waits for approval (it is over the order's maximum price).
	ApproveOverMax bool `json:"approveOverMax,omitempty"`
	// CancelOnceCreated cancels the delivery once told that the provider created it.
	CancelOnceCreated bool `json:"cancelOnceCreated,omitempty"`
}

// OrderSummary is built from the notifications alone: the order workflow never asks the delivery.
type OrderSummary struct {
	Reference         string `json:"reference"`
	WorkflowID        string `json:"workflowId"`
	OrderWorkflowID   string `json:"orderWorkflowId"`
	Approved          bool   `json:"approved,omitempty"`
	QuotedAmount      int64  `json:"quotedAmount,omitempty"`
	Status            string `json:"status,omitempty"`
	DeliveryID        string `json:"deliveryId,omitempty"`
	Destinations      int    `json:"destinations,omitempty"`
	TrackingLinks     int    `json:"trackingLinks,omitempty"`
	Cancellation      string `json:"cancellation,omitempty"`
	CancelledWorkflow bool   `json:"cancelledWorkflow,omitempty"`
	// Outcome is delivery.ended's change.outcome: completed, cancelled or failed.
	Outcome string `json:"outcome"`
	// Notifications received, each sequence once; Duplicates (a signal re-sent after a lost answer) were ignored.
	Notifications int `json:"notifications"`
	Duplicates    int `json:"duplicates"`
	// InSequence: the sequences arrived as 1, 2, …, Notifications, with no gap.
	InSequence bool `json:"inSequence"`
	// Types of the notifications, in sequence order.
	Types []string `json:"types"`
	// DeliveryStatuses told by delivery.status_changed, in order.
	DeliveryStatuses []string `json:"deliveryStatuses"`
}

// OrderWorkflow starts its delivery as a child workflow (which therefore notifies it, its parent,
// by signal on every change), acts on what it is told, and returns once told that the delivery ended.
func OrderWorkflow(ctx workflow.Context, in OrderInput) (OrderSummary, error) {
	log := workflow.GetLogger(ctx)
	deliveryID := DeliveryWorkflowID(in.Delivery)
	out := OrderSummary{Reference: in.Delivery.Reference, WorkflowID: deliveryID, OrderWorkflowID: workflow.GetInfo(ctx).WorkflowExecution.ID, InSequence: true, Types: []string{}, DeliveryStatuses: []string{}}
	changes := workflow.GetSignalChannel(ctx, NotifySignal)

	// Cancelling childCtx cancels the delivery workflow (Temporal's cancellation request); the
	// order workflow itself goes on, and hears how the cancellation went.
	childCtx, cancelDelivery := workflow.WithCancel(ctx)
	delivery := workflow.ExecuteChildWorkflow(workflow.WithChildOptions(childCtx, deliveryOptions(in)), DeliveryWorkflowType, in.Delivery)
	if err := delivery.GetChildWorkflowExecution().Get(ctx, nil); err != nil {
		return out, fmt.Errorf("starting %s: %w", deliveryID, err)
	}
	log.Info("started delivery", "workflowId", deliveryID)

	cancelRequested := false
	var last int64 // the last sequence applied
	for out.Outcome == "" {
		var n DeliveryNotification
		if !changes.ReceiveAsync(&n) {
			if delivery.IsReady() {
				break // it ended without a word: a refused start tells nothing (its error says why)
			}
			// Wait for the next notification, or for the delivery workflow's end.
			received := false
			workflow.NewSelector(ctx).
				AddReceive(changes, func(c workflow.ReceiveChannel, _ bool) { received = c.ReceiveAsync(&n) }).
				AddFuture(delivery, func(workflow.Future) {}).
				Select(ctx)
			if !received {
				continue
			}
		}
		if n.Sequence <= last {
			out.Duplicates++
			continue
		}
		if n.Sequence != last+1 {
			out.InSequence = false
		}
		last = n.Sequence
		out.Notifications++
		out.Types = append(out.Types, n.Type)
		log.Info("told", "workflowId", deliveryID, "sequence", n.Sequence, "type", n.Type, "subject", n.Change.Subject, "status", n.Change.Status)

		switch n.Type {
		case "quote.awaiting_approval":
			var price Price
			if n.Change.Quote != nil {
				price = n.Change.Quote.Price
			}
			out.QuotedAmount = price.Amount
			if !in.ApproveOverMax {
				continue // it waits; the order system could reject it (update rejectQuote) or cancel
			}
			log.Info(fmt.Sprintf("quote %d %s is over the maximum: approving", price.Amount, price.Currency), "workflowId", deliveryID)
			// A workflow cannot send an update: an activity does, with the client.
			actx := workflow.WithActivityOptions(ctx, workflow.ActivityOptions{
				StartToCloseTimeout: 30 * time.Second,
				RetryPolicy:         &temporal.RetryPolicy{MaximumAttempts: 5},
			})
			var a *OrderActivities
			if err := workflow.ExecuteActivity(actx, a.ApproveQuote, deliveryID).Get(ctx, nil); err != nil {
				return out, fmt.Errorf("approving the quote of %s: %w", deliveryID, err)
			}
			out.Approved = true
		case "delivery.status_changed":
			out.DeliveryStatuses = append(out.DeliveryStatuses, n.Change.Status)
			if in.CancelOnceCreated && n.Change.Status == "CREATED" && !cancelRequested {
				log.Info("created at the provider: cancelling", "workflowId", deliveryID)
				cancelDelivery()
				cancelRequested = true
			}
		case "cancellation.outcome":
			if n.Change.Cancellation != nil {
				out.Cancellation = n.Change.Cancellation.Outcome
			}
		case "delivery.ended":
			out.Outcome = n.Change.Outcome
			if final := n.Result; final != nil {
				out.Status, out.DeliveryID, out.Destinations = final.Status, final.DeliveryID, len(final.Destinations)
				for _, d := range final.Destinations {
					if d.TrackingURL != "" {
						out.TrackingLinks++
					}
				}
			}
		}
	}

	// delivery.ended is the delivery workflow's last act: its end follows at once (a refused start's too).
	err := delivery.Get(ctx, nil)
	var cancelled *temporal.CanceledError
	out.CancelledWorkflow = errors.As(err, &cancelled)
	if err != nil && !out.CancelledWorkflow {
		return out, fmt.Errorf("%s: %w", deliveryID, err)
	}
	if out.Outcome == "" {
		return out, fmt.Errorf("%s ended without telling its end", deliveryID)
	}
	log.Info("delivery ended", "workflowId", deliveryID, "outcome", out.Outcome, "status", out.Status)
	return out, nil
}

// deliveryOptions: what the TypeScript client does at start (docs/any-language.md). The workflow ID
// from the reference, a reference used once, the Web UI's summary (no personal data), food first,
// and the search attributes visible before the delivery's first workflow task.
func deliveryOptions(in OrderInput) workflow.ChildWorkflowOptions {
	d := in.Delivery
	priority := 3
	if d.Order.IsFood {
		priority = 1
	}
	// DeliveryAccount from the start for an account other than default (the workflow sets it for default).
	searchAttributes := temporal.SearchAttributes{}
	summary := fmt.Sprintf("%d stops · ref %s (Go order workflow)", len(d.Order.Destinations), d.Reference)
	if d.Account != "" && d.Account != DefaultAccount {
		searchAttributes = temporal.NewSearchAttributes(DeliveryAccountKey.ValueSet(d.Account))
		summary += " · account " + d.Account
	}
	return workflow.ChildWorkflowOptions{
		WorkflowID:            DeliveryWorkflowID(d),
		TypedSearchAttributes: searchAttributes,
		TaskQueue:             in.DeliveriesTaskQueue,
		WorkflowIDReusePolicy: enums.WORKFLOW_ID_REUSE_POLICY_REJECT_DUPLICATE,
		// A delivery under way at the provider outlives its order workflow, whatever becomes of that.
		ParentClosePolicy: enums.PARENT_CLOSE_POLICY_ABANDON,
		// Cancelling returns once the delivery has ended (cancelled at the provider, or followed to its real end).
		WaitForCancellation: true,
		StaticSummary:       summary,
		Priority:            temporal.Priority{PriorityKey: priority},
	}
}

// OrderActivities do what a workflow cannot: call Temporal as a client.
type OrderActivities struct {
	Client client.Client
}

// ApproveQuote sends the delivery's approveQuote update. The update ID makes a retried attempt the
// same update, so an approval whose answer was lost is not refused as "no quote is waiting".
func (a *OrderActivities) ApproveQuote(ctx context.Context, workflowID string) (string, error) {
	handle, err := a.Client.UpdateWorkflow(ctx, client.UpdateWorkflowOptions{
		WorkflowID:   workflowID,
		UpdateID:     "approve-quote",
		UpdateName:   ApproveQuoteUpdate,
		WaitForStage: client.WorkflowUpdateStageCompleted,
	})
	if err != nil {
		return "", err
	}
	var state DeliveryState
	if err := handle.Get(ctx, &state); err != nil {
		return "", err
	}
	return state.Phase, nil
}
