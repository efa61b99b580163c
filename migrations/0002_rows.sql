ALTER TABLE `panels` ADD `columns_version` integer DEFAULT 0 NOT NULL;--> statement-breakpoint
ALTER TABLE `records` ADD `cells` text;--> statement-breakpoint
ALTER TABLE `records` ADD `errors` text;--> statement-breakpoint
ALTER TABLE `records` ADD `cells_version` integer DEFAULT 0 NOT NULL;