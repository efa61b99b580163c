CREATE TABLE `held_records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`data_source_id` integer NOT NULL,
	`generation` integer NOT NULL,
	`key` text NOT NULL,
	`data` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `held_records_source_generation_key_idx` ON `held_records` (`data_source_id`,`generation`,`key`);--> statement-breakpoint
CREATE INDEX `held_records_tenant_panel_idx` ON `held_records` (`tenant_id`,`panel_id`);