#!/bin/sh
echo doomed
