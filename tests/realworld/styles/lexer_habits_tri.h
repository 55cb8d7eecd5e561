#pragma once
#define LEXER_TRI 3.0f
