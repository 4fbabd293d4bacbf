// Package openai reads the OpenAI-shaped request bodies the gateway and the
// fake model both accept: one JSON object per body (DecodeObject) and the
// chat completion request (ParseChat). Errors are *RequestError, naming the
// JSON field to blame, so both servers answer a bad body with the same 400.
package openai
