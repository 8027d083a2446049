import { Field, Float, ID, ObjectType } from '@nestjs/graphql';

@ObjectType('Quote')
export class QuoteModel {
  @Field(() => String)
  symbol!: string;

  @Field(() => Float)
  price!: number;

  @Field(() => String)
  currency!: string;

  @Field(() => String, { description: 'ISO 8601' })
  asOf!: string;
}

@ObjectType('PriceAlert')
export class PriceAlertModel {
  @Field(() => ID)
  id!: string;

  @Field(() => String)
  symbol!: string;

  @Field(() => Float, { description: 'Alert when the price reaches this' })
  price!: number;
}
