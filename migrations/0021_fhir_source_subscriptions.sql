CREATE TABLE `fhir_source_subscriptions` (
	`data_source_id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`token_hash` text NOT NULL,
	`token` text NOT NULL,
	`secret` text NOT NULL,
	`spec` text NOT NULL,
	`upstream_id` text,
	`status` text DEFAULT 'requested' NOT NULL,
	`error` text,
	`events_since_start` integer DEFAULT 0 NOT NULL,
	`last_notification_at` text,
	`caught_up_at` text NOT NULL,
	`catch_up_from` text,
	`catch_up_running` text,
	`last_claim` text,
	`checked_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fhir_source_subscriptions_token_idx` ON `fhir_source_subscriptions` (`token_hash`);