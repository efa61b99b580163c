CREATE TABLE `webhook_events` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`data_source_id` integer NOT NULL,
	`event_id` text NOT NULL,
	`received_at` text NOT NULL,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `webhook_events_source_event_idx` ON `webhook_events` (`data_source_id`,`event_id`);--> statement-breakpoint
ALTER TABLE `data_sources` ADD `webhook_endpoint` text;--> statement-breakpoint
CREATE UNIQUE INDEX `data_sources_webhook_endpoint_idx` ON `data_sources` (`webhook_endpoint`);