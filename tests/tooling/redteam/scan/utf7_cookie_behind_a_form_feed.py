# Lab 03# student solution
# -*- coding: utf-7 -*-
x = 1
