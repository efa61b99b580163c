CREATE TABLE `sync_staged_records` (
	`run_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`key` text,
	`data` text NOT NULL,
	`deleted` integer DEFAULT false NOT NULL,
	PRIMARY KEY(`run_id`, `seq`),
	FOREIGN KEY (`run_id`) REFERENCES `sync_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
ALTER TABLE `sync_runs` ADD `checkpoint` text;