"""The chronoq CDK app: one stack composed of one construct per capability."""
