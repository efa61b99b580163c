CREATE TABLE `row_comments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`row_id` integer NOT NULL,
	`author_id` text NOT NULL,
	`text` text NOT NULL,
	`created_at` text NOT NULL,
	`updated_at` text NOT NULL,
	FOREIGN KEY (`row_id`) REFERENCES `row_identities`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `row_comments_row_idx` ON `row_comments` (`row_id`,`id`);--> statement-breakpoint
CREATE TABLE `row_identities` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`tenant_id` text NOT NULL,
	`panel_id` integer NOT NULL,
	`data_source_id` integer NOT NULL,
	`key` text NOT NULL,
	`status` text DEFAULT 'open' NOT NULL,
	`assignee` text,
	`claimed_at` text,
	`claim_expires_at` text,
	`due_at` text,
	`snoozed_until` text,
	`version` integer DEFAULT 0 NOT NULL,
	`work_updated_at` text,
	`work_updated_by` text,
	`comment_count` integer DEFAULT 0 NOT NULL,
	`entered_at` text,
	`overdue_for` text,
	`woken_for` text,
	`created_at` text NOT NULL,
	FOREIGN KEY (`data_source_id`) REFERENCES `data_sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `row_identities_source_key_idx` ON `row_identities` (`data_source_id`,`key`);--> statement-breakpoint
CREATE INDEX `row_identities_tenant_panel_idx` ON `row_identities` (`tenant_id`,`panel_id`);--> statement-breakpoint
CREATE INDEX `row_identities_due_idx` ON `row_identities` (`due_at`) WHERE due_at IS NOT NULL AND overdue_for IS NOT due_at;--> statement-breakpoint
CREATE INDEX `row_identities_snoozed_idx` ON `row_identities` (`snoozed_until`) WHERE snoozed_until IS NOT NULL AND woken_for IS NOT snoozed_until;--> statement-breakpoint
CREATE INDEX `row_identities_claim_idx` ON `row_identities` (`claim_expires_at`) WHERE claim_expires_at IS NOT NULL;--> statement-breakpoint
ALTER TABLE `panels` ADD `workflow` text;--> statement-breakpoint
ALTER TABLE `records` ADD `row_id` integer;--> statement-breakpoint
ALTER TABLE `records` ADD `work` text;--> statement-breakpoint
CREATE INDEX `records_row_idx` ON `records` (`row_id`);--> statement-breakpoint
INSERT INTO `row_identities` (`tenant_id`, `panel_id`, `data_source_id`, `key`, `entered_at`, `created_at`)
  SELECT `tenant_id`, `panel_id`, `data_source_id`, `key`, min(`created_at`), min(`created_at`) FROM `records` GROUP BY `data_source_id`, `key`;--> statement-breakpoint
UPDATE `records` SET `row_id` = (SELECT i.`id` FROM `row_identities` i WHERE i.`data_source_id` = `records`.`data_source_id` AND i.`key` = `records`.`key`);
