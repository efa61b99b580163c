CREATE TABLE `subscription_deliveries` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`subscription_id` integer NOT NULL,
	`delivery_id` text NOT NULL,
	`event_seq` integer,
	`event_type` text NOT NULL,
	`payload` text,
	`status` text NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` text,
	`last_attempt_at` text,
	`status_code` integer,
	`duration_ms` integer,
	`error` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`subscription_id`) REFERENCES `subscriptions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `subscription_deliveries_queue_idx` ON `subscription_deliveries` (`subscription_id`,`status`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `subscription_deliveries_event_idx` ON `subscription_deliveries` (`subscription_id`,`event_seq`);--> statement-breakpoint
CREATE INDEX `subscription_deliveries_updated_idx` ON `subscription_deliveries` (`updated_at`);--> statement-breakpoint
CREATE TABLE `subscriptions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`user_id` text NOT NULL,
	`url` text NOT NULL,
	`events` text NOT NULL,
	`panel_id` integer,
	`view_id` integer,
	`description` text,
	`secret` text NOT NULL,
	`active` integer DEFAULT true NOT NULL,
	`disabled_reason` text,
	`consecutive_failures` integer DEFAULT 0 NOT NULL,
	`cursor_seq` integer DEFAULT 0 NOT NULL,
	`lease_token` text,
	`lease_expires_at` text,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL
);
--> statement-breakpoint
CREATE INDEX `subscriptions_tenant_user_idx` ON `subscriptions` (`tenant_id`,`user_id`);--> statement-breakpoint
CREATE INDEX `subscriptions_active_idx` ON `subscriptions` (`active`,`tenant_id`);