-- Custom SQL migration file, put your code below! --
-- A "" read into a number, boolean, date or datetime column is now null (docs/views-and-rows.md
-- "Exact values"). Panels with such a base column were materialised under the old rule: mark them
-- stale so the scheduler recomputes their rows from the stored records. The type names are those
-- kindOf (src/engine/cells/coerce.ts) reads as number, boolean, date or datetime.
UPDATE `panels` SET `columns_version` = `columns_version` + 1
WHERE `deleted_at` IS NULL AND EXISTS (
  SELECT 1 FROM `columns` c
  WHERE c.`panel_id` = `panels`.`id` AND c.`column_type` = 'base'
    AND lower(c.`type`) IN ('number', 'currency', 'percentage', 'integer', 'decimal', 'boolean', 'date', 'datetime')
);
