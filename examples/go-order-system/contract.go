package main

// The delivery workflow's contract (docs/workflow-contract.json), the parts this order system uses.

import "go.temporal.io/sdk/temporal"

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

// FollowUp is FollowUpSettings, the one field used here: how long a delivery that has ended stays
// open for late statuses (the workflow's default is 10 minutes; its last notification comes after).
type FollowUp struct {
	EndGraceMs int64 `json:"endGraceMs"`
}

// DeliveryInput is DeliveryWorkflowInput. No `notify`: a delivery started as a child workflow
// notifies its parent by default.
type DeliveryInput struct {
	Reference string `json:"reference"`
	// Account is the courier account; empty means "default".
	Account  string    `json:"account,omitempty"`
	Order    Order     `json:"order"`
	MaxPrice *Price    `json:"maxPrice,omitempty"`
	FollowUp *FollowUp `json:"followUp,omitempty"`
}

type Quote struct {
	Price Price `json:"price"`
}

type CancellationOutcome struct {
	Outcome string `json:"outcome"` // before_creation | cancelled | refused
	Reason  string `json:"reason,omitempty"`
}

type DestinationState struct {
	ID          string `json:"id"`
	Status      string `json:"status"`
	TrackingURL string `json:"trackingUrl"`
}

// DeliveryState is the workflow's result, its `status` query's answer and, without the timeline,
// the state each notification carries.
type DeliveryState struct {
	Reference    string               `json:"reference"`
	Phase        string               `json:"phase"`
	DeliveryID   string               `json:"deliveryId,omitempty"`
	Status       string               `json:"status,omitempty"`
	Destinations []DestinationState   `json:"destinations"`
	Quote        *Quote               `json:"quote,omitempty"`
	Price        *Price               `json:"price,omitempty"`
	IsFood       bool                 `json:"isFood"`
	Cancellation *CancellationOutcome `json:"cancellation,omitempty"`
}

// NotificationChange says what changed; fields that do not apply to the type are absent.
type NotificationChange struct {
	Subject        string               `json:"subject"`
	Status         string               `json:"status,omitempty"`
	PreviousStatus string               `json:"previousStatus,omitempty"`
	Late           bool                 `json:"late,omitempty"`
	Source         string               `json:"source,omitempty"`
	TrackingURL    string               `json:"trackingUrl,omitempty"`
	Quote          *Quote               `json:"quote,omitempty"`
	MaxPrice       *Price               `json:"maxPrice,omitempty"`
	Fields         []string             `json:"fields,omitempty"`
	FailureType    string               `json:"failureType,omitempty"`
	Cancellation   *CancellationOutcome `json:"cancellation,omitempty"`
	Outcome        string               `json:"outcome,omitempty"` // delivery.ended: completed | cancelled | failed
}

// DeliveryNotification is what a delivery signals its order workflow on every change, in
// `sequence` order (1, 2, 3, …); the last is `delivery.ended`, carrying the final state in Result.
type DeliveryNotification struct {
	Type       string             `json:"type"`
	EventID    string             `json:"eventId"`
	Sequence   int64              `json:"sequence"`
	Reference  string             `json:"reference"`
	DeliveryID string             `json:"deliveryId,omitempty"`
	At         string             `json:"at"`
	Change     NotificationChange `json:"change"`
	State      DeliveryState      `json:"state"`
	Result     *DeliveryState     `json:"result,omitempty"`
}

// The names this order system uses.
const (
	DeliveryWorkflowType = "delivery"
	NotifySignal         = "deliveryChanged" // the default; a start's notify.signal may name another
	ApproveQuoteUpdate   = "approveQuote"
)

// DefaultAccount is the account of a delivery whose input names none.
const DefaultAccount = "default"

// DeliveryAccountKey is the search attribute naming a delivery's courier account.
var DeliveryAccountKey = temporal.NewSearchAttributeKeyKeyword("DeliveryAccount")

// DeliveryWorkflowID is the delivery workflow's ID (contract/workflow-ids.ts): `delivery:<reference>`
// for the default account, `delivery@<account>:<reference>` for any other.
func DeliveryWorkflowID(d DeliveryInput) string {
	if d.Account == "" || d.Account == DefaultAccount {
		return "delivery:" + d.Reference
	}
	return "delivery@" + d.Account + ":" + d.Reference
}
