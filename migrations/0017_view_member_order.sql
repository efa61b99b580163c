ALTER TABLE `views` ADD `member_count` integer;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s0` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s1` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s2` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s3` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s4` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s5` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s6` blob;--> statement-breakpoint
ALTER TABLE `pending_changes` ADD `s7` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s0` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s1` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s2` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s3` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s4` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s5` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s6` blob;--> statement-breakpoint
ALTER TABLE `view_members` ADD `s7` blob;--> statement-breakpoint
CREATE INDEX `view_members_order_idx` ON `view_members` (`view_id`,"s0" COLLATE NOCASE,"s1" COLLATE NOCASE,"s2" COLLATE NOCASE,"s3" COLLATE NOCASE,"s4" COLLATE NOCASE,"s5" COLLATE NOCASE,"s6" COLLATE NOCASE,"s7" COLLATE NOCASE,`row_id`);