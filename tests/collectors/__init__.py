"""Tests of the Hadoop collectors and the cluster simulator."""
