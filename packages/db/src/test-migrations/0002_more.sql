ALTER TABLE things ADD COLUMN note text;
