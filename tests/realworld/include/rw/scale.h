// scale.h: a project header the hipified kernel includes.
#pragma once
#define RW_SCALE(v) ((v) * 0.5f)
