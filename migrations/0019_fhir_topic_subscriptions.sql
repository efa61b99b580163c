CREATE TABLE `fhir_topic_events` (
	`subscription_id` integer NOT NULL,
	`event_number` integer NOT NULL,
	`event_seq` integer NOT NULL,
	PRIMARY KEY(`subscription_id`, `event_number`),
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `fhir_topic_events_seq_idx` ON `fhir_topic_events` (`subscription_id`,`event_seq`);--> statement-breakpoint
CREATE TABLE `fhir_topic_subscriptions` (
	`subscription_id` integer PRIMARY KEY NOT NULL,
	`tenant_id` text NOT NULL,
	`status` text NOT NULL,
	`payload` text NOT NULL,
	`topic` text NOT NULL,
	`filters` text NOT NULL,
	`heartbeat_seconds` integer,
	`timeout_seconds` integer,
	`headers` text,
	`resource` text NOT NULL,
	`event_count` integer DEFAULT 0 NOT NULL,
	`last_sent_at` text NOT NULL,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `subscriptions` ADD `kind` text DEFAULT 'webhook' NOT NULL;